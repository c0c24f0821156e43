"""The turn loop (DESIGN §1): build the request from state, stream the model, route the tool
calls, backfill the outputs, and go round until the model answers without calling a tool.

An interrupt cancels the turn task; the ``finally`` here gives every ``function_call`` still
open an "aborted" output, so the thread stays valid for the next turn.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Literal

from nbagent.core.approval import known_safe
from nbagent.core.checkpoints import settle
from nbagent.core.context import Reason, compact, text_tokens, tools_tokens
from nbagent.core.tool_call import AbortTurn, execute_call, recordable
from nbagent.core.turn_context import TurnContext
from nbagent.models.base import (
    Completed,
    ModelError,
    ModelRequest,
    ReasoningDone,
    ReasoningSummaryDelta,
    TextDelta,
    ToolCallDone,
    Usage,
)
from nbagent.protocol import (
    AgentMessage,
    AgentMessageDelta,
    AssistantMessage,
    FunctionCall,
    Reasoning,
    ReasoningDelta,
    ReasoningItem,
    TokenCount,
    TokenUsage,
    TokenUsageInfo,
    ToolCallEnd,
    ToolSpec,
    TurnAborted,
    TurnCompleted,
    TurnFailed,
    TurnRecord,
    TurnStarted,
    UserMessage,
    UserTurn,
    WarningEvent,
    new_id,
)
from nbagent.store import repair_open_calls

TurnStatus = Literal["completed", "aborted", "failed"]


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
        entry = turn.state.catalogue.get(call.name)
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


async def compact_now(turn: TurnContext, reason: Reason, extra: int) -> bool:
    """Shorten the model's view (recorded as an item, announced as an event); False when there
    was nothing left to shorten."""
    assert turn.model is not None
    thread = turn.thread
    done = await compact(thread.items, thread.context, turn.state.budget, model=turn.model, model_name=turn.model_name,
                         extra=extra, turn_id=turn.turn_id, reason=reason)
    if done is None:
        return False
    turn.record(done.item)
    turn.emit(done.event(reason))
    return True


async def _sample_within_window(turn: TurnContext) -> tuple[str, list[FunctionCall]]:
    """One model request whose view fits the window: compacted first when the estimate passes
    the limit, and once more (then retried) when the server still says it is too long."""
    if turn.meter is not None:
        turn.meter.check()  # the day's cap, before anything is sent (a summary request too)
    catalogue = turn.router.catalogue()
    if turn.request_tools is None:
        turn.state.catalogue, carried = catalogue, list(catalogue.values())
    else:
        turn.state.catalogue, carried = turn.request_tools.select(catalogue, turn.thread.items)
        if (left_out := turn.request_tools.left_out()) is not None:
            turn.emit(WarningEvent(message=left_out))
    instructions = turn.instructions()
    if turn.state.preamble_text:
        instructions = f"{instructions}\n\n{turn.state.preamble_text}"
    instructions, tools = turn.thread.for_provider(instructions, turn.router.for_model(carried))
    extra = text_tokens(instructions) + tools_tokens(tools)
    limits = [x for x in (turn.state.budget.limit, turn.thread.context.refused_at) if x]
    if limits and turn.thread.context.estimate(turn.thread.items) + extra > min(limits):
        await compact_now(turn, "limit", extra)
    try:
        return await _sample(turn, instructions, tools, extra)
    except ModelError as exc:
        if exc.code != "context_length" or not await compact_now(turn, "context_length", extra):
            raise
    return await _sample(turn, instructions, tools, extra)


async def _sample(turn: TurnContext, instructions: str, tools: list[ToolSpec], extra: int) -> tuple[str, list[FunctionCall]]:
    """One model request, streamed into events; returns the text and the tool calls."""
    # Built without re-validating the history: every item was validated when it was made, and
    # validating the whole thread on every round would make a long turn quadratic.
    view = turn.thread.context.sync(turn.thread.items)
    sent = len(view)
    request = ModelRequest.model_construct(
        model=turn.model_name,
        instructions=instructions,
        items=list(view),
        tools=tools,
        parallel_tool_calls=turn.settings.parallel_tool_calls,
        purpose="turn",
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
            turn.emit(AgentMessageDelta(item_id=message_id, delta=part.delta))
        elif isinstance(part, ReasoningSummaryDelta):
            turn.emit(ReasoningDelta(item_id=reasoning_id, delta=part.delta))
        elif isinstance(part, ReasoningDone):
            reasoning = ReasoningItem(
                id=reasoning_id, turn_id=turn.turn_id, summary=part.summary, encrypted_content=part.encrypted_content
            )
        elif isinstance(part, ToolCallDone):
            # The model's own words for a call are shown, recorded and sent back verbatim, like
            # its text: a secret it echoes there (a hostile model server) is redacted as in text.
            redact = turn.thread.redactor().text
            name = redact(part.name)
            entry = turn.state.catalogue.get(name)
            calls.append(
                FunctionCall(
                    turn_id=turn.turn_id,
                    call_id=_unique_call_id(redact(part.call_id), turn.thread.call_ids, calls),
                    name=name,
                    arguments=recordable(part.arguments),
                    server=entry[0].server if entry else None,
                    raw_tool=entry[0].raw_name if entry else None,
                )
            )
        elif isinstance(part, Usage):
            turn.thread.context.observe(part.input_tokens, sent, extra)
            _count(turn, part)
        elif isinstance(part, Completed) and part.text and not text_parts:
            text_parts.append(part.text)
    if reasoning is not None:
        turn.record(reasoning)
        turn.emit(Reasoning(item_id=reasoning_id, text=reasoning.summary))
    text = "".join(text_parts)
    if text:
        turn.record(AssistantMessage(id=message_id, turn_id=turn.turn_id, text=text))
        turn.emit(AgentMessage(item_id=message_id, text=text))
    for call in calls:
        turn.record(call)
    return text, calls


def _count(turn: TurnContext, part: Usage) -> None:
    """One request's tokens: the turn's, the thread's and the user's day, announced as Codex's
    ``token_count``."""
    last = part.tokens()
    turn.state.usage += last
    turn.thread.usage += last
    if turn.meter is not None:
        turn.meter.count(last)
    info = TokenUsageInfo(total_token_usage=turn.thread.usage, last_token_usage=last,
                          model_context_window=turn.state.budget.window)
    turn.emit(TokenCount(info=info))


async def _run_calls(turn: TurnContext, calls: list[FunctionCall]) -> None:
    """Each output is recorded the moment its call ends, so an interrupt loses no finished work."""

    async def run_and_record(call: FunctionCall) -> None:
        turn.record(await execute_call(turn, call))

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
    names = {i.call_id: i.name for i in turn.thread.items if isinstance(i, FunctionCall)}
    for output in repair_open_calls(turn.thread.items, output=f"aborted: {reason}; this call did not finish"):
        output.turn_id = turn.turn_id
        turn.record(output)
        started = turn.state.begun.get(output.call_id)
        if started is not None:  # a card that began must not stay "running"
            turn.emit(
                ToolCallEnd(
                    call_id=output.call_id,
                    tool=names.get(output.call_id, ""),
                    output=output.output,
                    is_error=True,
                    status="aborted",
                    duration_ms=(time.perf_counter() - started) * 1000,
                )
            )


async def _ask_window(turn: TurnContext) -> None:
    """A model whose window config does not give may report it (a local server's own limit)."""
    ask = getattr(turn.model, "context_window", None)
    if turn.state.budget.window is None and ask is not None:
        window = await ask()
        if window:
            turn.state.budget = turn.state.budget.reported(window)


async def _read_preamble(turn: TurnContext) -> None:
    if turn.preamble is None:
        return
    try:
        turn.state.preamble_text = await turn.preamble() or ""
    except Exception as exc:  # boundary: what the workspace looks like is a help, never a failure
        turn.emit(WarningEvent(message=f"the notebook context could not be read: {type(exc).__name__}: {exc}"))


def _spent(turn: TurnContext) -> TokenUsage | None:
    """The turn's tokens for its closing line; none when no request reported any."""
    return turn.state.usage if turn.state.usage.total_tokens else None


async def run_turn(turn: TurnContext, op: UserTurn) -> TurnOutcome:
    """Run the turn ``op`` asked for, in ``turn``; ends with exactly one terminal event."""
    tid, policy, model_name = turn.turn_id, turn.policy, turn.model_name
    turn.thread.refresh_secrets()
    turn.thread.write(TurnRecord(turn_id=tid, status="started", entry=op.entry, model=model_name, policy=policy))
    turn.emit(TurnStarted(prompt=op.prompt, entry=op.entry, model=model_name, policy=policy))
    turn.record(UserMessage(turn_id=tid, text=op.prompt))
    last_text = ""
    rounds = turn.settings.max_tool_rounds
    try:
        await turn.servers_ready()
        await _read_preamble(turn)
        await _ask_window(turn)
        for _ in range(rounds):
            text, calls = await _sample_within_window(turn)
            last_text = text or last_text
            if not calls:
                break
            await _run_calls(turn, calls)
        else:
            raise ModelError("other", f"stopped after {rounds} tool rounds (max_tool_rounds)")
    except (asyncio.CancelledError, AbortTurn) as exc:
        reason = str(exc) if isinstance(exc, AbortTurn) else (turn.stop_reason() or "interrupted")
        turn.cancel_asks()
        _close_open_calls(turn, reason)
        await settle(turn)
        turn.thread.write(TurnRecord(turn_id=tid, status="aborted", entry=op.entry, reason=reason, usage=_spent(turn)))
        turn.emit(TurnAborted(reason=reason))
        return TurnOutcome(tid, "aborted", last_text, reason)
    except ModelError as exc:
        _close_open_calls(turn, str(exc))
        await settle(turn)
        turn.thread.write(TurnRecord(turn_id=tid, status="failed", entry=op.entry, reason=str(exc), usage=_spent(turn)))
        turn.emit(TurnFailed(message=str(exc), code=exc.code))
        return TurnOutcome(tid, "failed", last_text, str(exc), exc.code)
    except Exception as exc:  # boundary: an internal fault fails this turn, never the session
        _close_open_calls(turn, "internal error")
        await settle(turn)
        message = turn.thread.redactor().text(f"internal error: {type(exc).__name__}: {exc}")  # it may quote a reply
        turn.thread.write(TurnRecord(turn_id=tid, status="failed", entry=op.entry, reason=message, usage=_spent(turn)))
        turn.emit(TurnFailed(message=message, code="internal"))
        return TurnOutcome(tid, "failed", last_text, message, "internal")
    await settle(turn)
    turn.thread.write(TurnRecord(turn_id=tid, status="completed", entry=op.entry, model=model_name, policy=policy,
                                 usage=_spent(turn)))
    turn.emit(TurnCompleted(last_message=last_text))
    return TurnOutcome(tid, "completed", last_text)
