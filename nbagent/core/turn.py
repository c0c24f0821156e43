"""The turn loop (DESIGN §1): build the request from state, stream the model, route the tool
calls, backfill the outputs, and go round until the model answers without calling a tool.

An interrupt cancels the turn task; the ``finally`` here gives every ``function_call`` still
open an "aborted" output, so the thread stays valid for the next turn.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from nbagent.core.approval import known_safe
from nbagent.core.provider import ToolProvider
from nbagent.core.tool_call import AbortTurn, execute_call
from nbagent.mcp.meta import trace_id_for_turn
from nbagent.models.base import (
    Completed,
    ModelClient,
    ModelError,
    ModelRequest,
    ReasoningDone,
    ReasoningSummaryDelta,
    TextDelta,
    ToolCallDone,
    Usage,
)
from nbagent.store import repair_open_calls
from nbagent.protocol import (
    AgentMessage,
    AgentMessageDelta,
    AssistantMessage,
    Entry,
    FunctionCall,
    Policy,
    Reasoning,
    ReasoningDelta,
    ReasoningItem,
    TokenUsage,
    ToolCallEnd,
    ToolSpec,
    TurnAborted,
    TurnCompleted,
    TurnFailed,
    TurnRecord,
    TurnStarted,
    UserMessage,
    UserTurn,
    new_id,
)

if TYPE_CHECKING:
    from nbagent.core.session import Session

TurnStatus = Literal["completed", "aborted", "failed"]
_USAGE_COUNTS = ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens")


@dataclass
class TurnContext:
    """What one turn sees; per-turn settings never leak into the session."""

    session: Session
    turn_id: str
    model: ModelClient | None
    """``None`` for calls that come from outside a model turn (``Session.call_tool``)."""
    model_name: str
    policy: Policy
    entry: Entry = "python"
    catalogue: dict[str, tuple[ToolSpec, ToolProvider]] = field(default_factory=dict)
    usage: TokenUsage = field(default_factory=TokenUsage)
    begun: dict[str, float] = field(default_factory=dict)
    """Call id -> start time of every call whose ``tool_call_begin`` went out."""

    @property
    def trace_id(self) -> str:
        """One W3C trace per turn; each call is a span of it."""
        return trace_id_for_turn(self.turn_id)


@dataclass
class TurnOutcome:
    turn_id: str
    status: TurnStatus
    text: str = ""
    error: str | None = None
    error_code: str | None = None


def _batches(turn: TurnContext, calls: list[FunctionCall]) -> list[tuple[bool, list[FunctionCall]]]:
    """Consecutive calls of known-safe (read-only, trusted) tools share a batch and run together;
    they never ask (except under ``untrusted``, where nothing runs in parallel)."""
    batches: list[tuple[bool, list[FunctionCall]]] = []
    for call in calls:
        entry = turn.catalogue.get(call.name)
        parallel = entry is not None and known_safe(entry[0]) and turn.policy != "untrusted"
        if parallel and batches and batches[-1][0]:
            batches[-1][1].append(call)
        else:
            batches.append((parallel, [call]))
    return batches


def _unique_call_id(call_id: str, taken: set[str], pending: list[FunctionCall]) -> str:
    """Some OpenAI-compatible servers reuse ids such as ``call_0`` on every response; ids must
    be unique within a thread, since approvals, outputs and cards are keyed by them."""
    base = call_id or "call"
    unique, n = base, 1
    while unique in taken or any(c.call_id == unique for c in pending):
        n += 1
        unique = f"{base}_{n}"
    return unique


async def _sample(turn: TurnContext) -> tuple[str, list[FunctionCall]]:
    """One model request, streamed into events; returns the text and the tool calls."""
    session = turn.session
    turn.catalogue = session.router.catalogue()
    # Built without re-validating the history: every item was validated when it was made, and
    # validating the whole thread on every round would make a long turn quadratic.
    request = ModelRequest.model_construct(
        model=turn.model_name,
        instructions=session.instructions(),
        items=session.history,
        tools=[spec for spec, _ in turn.catalogue.values()],
        parallel_tool_calls=session.config.parallel_tool_calls,
    )
    message_id = new_id("item")
    reasoning_id = new_id("item")
    text_parts: list[str] = []
    reasoning: ReasoningItem | None = None
    calls: list[FunctionCall] = []
    assert turn.model is not None
    async for part in turn.model.stream(request):
        if isinstance(part, TextDelta):
            text_parts.append(part.delta)
            session.emit(AgentMessageDelta(item_id=message_id, delta=part.delta), turn_id=turn.turn_id)
        elif isinstance(part, ReasoningSummaryDelta):
            session.emit(ReasoningDelta(item_id=reasoning_id, delta=part.delta), turn_id=turn.turn_id)
        elif isinstance(part, ReasoningDone):
            reasoning = ReasoningItem(
                id=reasoning_id, turn_id=turn.turn_id, summary=part.summary, encrypted_content=part.encrypted_content
            )
        elif isinstance(part, ToolCallDone):
            entry = turn.catalogue.get(part.name)
            calls.append(
                FunctionCall(
                    turn_id=turn.turn_id,
                    call_id=_unique_call_id(part.call_id, session.call_ids, calls),
                    name=part.name,
                    arguments=part.arguments,
                    server=entry[0].server if entry else None,
                    raw_tool=entry[0].raw_name if entry else None,
                )
            )
        elif isinstance(part, Usage):
            sums = {k: getattr(turn.usage, k) + getattr(part, k) for k in _USAGE_COUNTS}
            turn.usage = TokenUsage(**sums, total_tokens=sums["input_tokens"] + sums["output_tokens"])
        elif isinstance(part, Completed) and part.text and not text_parts:
            text_parts.append(part.text)
    if reasoning is not None:
        session.record(reasoning)
        session.emit(Reasoning(item_id=reasoning_id, text=reasoning.summary), turn_id=turn.turn_id)
    text = "".join(text_parts)
    if text:
        session.record(AssistantMessage(id=message_id, turn_id=turn.turn_id, text=text))
        session.emit(AgentMessage(item_id=message_id, text=text), turn_id=turn.turn_id)
    for call in calls:
        session.record(call)
    return text, calls


async def _run_calls(turn: TurnContext, calls: list[FunctionCall]) -> None:
    """Each output is recorded the moment its call ends, so an interrupt loses no finished work."""

    async def run_and_record(call: FunctionCall) -> None:
        turn.session.record(await execute_call(turn, call))

    for parallel, batch in _batches(turn, calls):
        if parallel and len(batch) > 1:
            tasks = [asyncio.ensure_future(run_and_record(call)) for call in batch]
            try:
                await asyncio.gather(*tasks)
            except BaseException:
                # One call ended the turn (an "abort", a fault): the others must not run on
                # and record a second output after the turn closed their calls.
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
        else:
            for call in batch:
                await run_and_record(call)


def _close_open_calls(turn: TurnContext, reason: str) -> None:
    names = {i.call_id: i.name for i in turn.session.history if isinstance(i, FunctionCall)}
    for output in repair_open_calls(turn.session.history, output=f"aborted: {reason}; this call did not finish"):
        output.turn_id = turn.turn_id
        turn.session.record(output)
        started = turn.begun.get(output.call_id)
        if started is not None:  # a card that began must not stay "running"
            turn.session.emit(
                ToolCallEnd(
                    call_id=output.call_id,
                    tool=names.get(output.call_id, ""),
                    output=output.output,
                    is_error=True,
                    status="aborted",
                    duration_ms=(time.perf_counter() - started) * 1000,
                ),
                turn_id=turn.turn_id,
            )


async def run_turn(session: Session, op: UserTurn, model: ModelClient, model_name: str) -> TurnOutcome:
    policy: Policy = op.policy or session.policy
    turn = TurnContext(
        session=session, turn_id=op.turn_id, model=model, model_name=model_name, policy=policy, entry=op.entry
    )
    tid = op.turn_id
    session.write_line(TurnRecord(turn_id=tid, status="started", entry=op.entry, model=model_name, policy=policy))
    session.emit(TurnStarted(prompt=op.prompt, entry=op.entry, model=model_name, policy=policy), turn_id=tid)
    session.record(UserMessage(turn_id=tid, text=op.prompt))
    last_text = ""
    try:
        await session.wait_for_mcp()
        for _ in range(session.config.max_tool_rounds):
            text, calls = await _sample(turn)
            last_text = text or last_text
            if not calls:
                break
            await _run_calls(turn, calls)
        else:
            raise ModelError("other", f"stopped after {session.config.max_tool_rounds} tool rounds (max_tool_rounds)")
    except (asyncio.CancelledError, AbortTurn) as exc:
        reason = str(exc) if isinstance(exc, AbortTurn) else (session.interrupt_reason or "interrupted")
        session.cancel_asks()
        _close_open_calls(turn, reason)
        session.write_line(TurnRecord(turn_id=tid, status="aborted", entry=op.entry, reason=reason))
        session.emit(TurnAborted(reason=reason), turn_id=tid)
        return TurnOutcome(tid, "aborted", last_text, reason)
    except ModelError as exc:
        _close_open_calls(turn, str(exc))
        session.write_line(TurnRecord(turn_id=tid, status="failed", entry=op.entry, reason=str(exc)))
        session.emit(TurnFailed(message=str(exc), code=exc.code), turn_id=tid)
        return TurnOutcome(tid, "failed", last_text, str(exc), exc.code)
    except Exception as exc:  # boundary: an internal fault fails this turn, never the session
        _close_open_calls(turn, "internal error")
        message = f"internal error: {type(exc).__name__}: {exc}"
        session.write_line(TurnRecord(turn_id=tid, status="failed", entry=op.entry, reason=message))
        session.emit(TurnFailed(message=message, code="internal"), turn_id=tid)
        return TurnOutcome(tid, "failed", last_text, message, "internal")
    if turn.usage.total_tokens:
        session.emit(turn.usage, turn_id=tid)
    session.write_line(TurnRecord(turn_id=tid, status="completed", entry=op.entry, model=model_name, policy=policy))
    session.emit(TurnCompleted(last_message=last_text), turn_id=tid)
    return TurnOutcome(tid, "completed", last_text)
