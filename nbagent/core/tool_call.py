"""One tool call, from the model's request to the output it reads: parse, approve, run, wrap.

Nothing here raises into the turn except cancellation and an explicit "abort turn": malformed
arguments, unknown tools, denials and crashing tools all become outputs the model can read.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from nbagent.calls.arguments import MAX_ARGUMENT_DEPTH, TOO_DEEP, unsendable
from nbagent.calls.events import events_to
from nbagent.calls.trace import span_of
from nbagent.core.approval import ESCALATE, JUSTIFICATION, SANDBOX_DENIAL, SANDBOX_USED, escalation
from nbagent.core.checkpoints import before_change
from nbagent.core.provider import ToolProvider
from nbagent.core.request_tools import SEARCH_TOOL
from nbagent.core.tool_output import to_model_output
from nbagent.protocol import (
    CallInfo,
    ContentBlock,
    FunctionCall,
    FunctionCallOutput,
    Policy,
    Progress,
    SandboxDenied,
    TextBlock,
    ToolCallBegin,
    ToolCallEnd,
    ToolResult,
    ToolSpec,
)
from nbagent.schema.subset import ok_str

if TYPE_CHECKING:
    from nbagent.core.approval import ApprovalDesk
    from nbagent.core.turn_context import TurnContext


class AbortTurn(Exception):
    """The user chose "abort turn" at an approval."""


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """``(arguments, problem)``: the model's JSON string as an object, or why it is not one and
    what to send instead."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"the arguments are not valid JSON ({exc.msg} at position {exc.pos}): {raw[:200]!r}. {AS_OBJECT}"
    except RecursionError:  # nested deeper than the parser recurses: far past the limit
        return None, f"{TOO_DEEP}. {NOT_DEEPER}"
    if not isinstance(value, dict):
        return None, f"the arguments must be a JSON object, got {type(value).__name__}. {AS_OBJECT}"
    return checked(value)


def recordable(raw: str) -> str:
    """The model's arguments with each lone surrogate character written as its ``\\uXXXX``
    escape: JSON reads both alike (and ``checked`` refuses either, naming where), but only the
    escape can be encoded, so the call the model made can be recorded as made."""
    return raw if ok_str(raw) else raw.encode("utf-8", "backslashreplace").decode()


AS_OBJECT = "Send the arguments as a JSON object"
NOT_DEEPER = f"Send the arguments nested at most {MAX_ARGUMENT_DEPTH} levels deep"
PLAIN_JSON = "Send strings of Unicode text (a surrogate escape only as half of a pair) and finite numbers"


def checked(arguments: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """``(arguments, None)``, or ``(None, problem)`` when they cannot be sent on as they are
    (``unsendable``): refused before any approval, so no panel offers what could not be
    recorded or would not reach the server as shown."""
    problem = unsendable(arguments)
    if problem is None:
        return arguments, None
    return None, f"{problem}. {NOT_DEEPER if problem == TOO_DEEP else PLAIN_JSON}"


NAMES_LISTED = 50
"""An unknown tool's error lists the catalogue's names up to this many (the model reads it)."""


def _available(catalogue: Mapping[str, object]) -> str:
    """What the model is told exists after it named a tool that does not: every name of a small
    catalogue; of a large one, the way to find the rest."""
    if len(catalogue) <= NAMES_LISTED:
        return f"the available tools are: {', '.join(sorted(catalogue)) or 'none'}"
    if SEARCH_TOOL in catalogue:
        return f"{len(catalogue):,} tools are available: call {SEARCH_TOOL} with a few words of what you need"
    listed = ", ".join(sorted(catalogue)[:NAMES_LISTED])
    return f"the available tools include: {listed} (and {len(catalogue) - NAMES_LISTED:,} more)"


def _cap_for_rollout(result: ToolResult, max_bytes: int) -> list[ContentBlock]:
    if len(result.content) == 1 and type(only := result.content[0]) is TextBlock and len(only.text) <= max_bytes:
        return result.content  # one text block that fits (most results): kept as it is
    kept: list[ContentBlock] = []
    used = 0
    for block in result.content:
        size = len(getattr(block, "text", None) or getattr(block, "data", None) or "")
        if used + size > max_bytes:
            kept.append(TextBlock(text=f"[{len(result.content) - len(kept)} more block(s) not kept: rollout cap]"))
            break
        kept.append(block)
        used += size
    return kept


async def definition_to_run(asks: ApprovalDesk, spec: ToolSpec, provider: ToolProvider) -> ToolSpec | str:
    """The definition the call will run, which the approval is checked against: a source with a
    change announced waits for its re-list, and an "always" from the config lists again first
    (a server may change a tool between sessions without saying so)."""
    return await provider.current_definition(spec, relist=asks.recorded_always(spec) is not None)


Status = Literal["completed", "failed", "denied"]


@dataclass
class _Resolved:
    """A call whose tool exists, whose arguments parse and whose definition to run is known."""

    spec: ToolSpec
    provider: ToolProvider
    arguments: dict[str, Any]


async def _resolve(turn: TurnContext, call: FunctionCall, parsed: dict[str, Any] | None) -> _Resolved | ToolResult:
    """Find the tool, parse the arguments (unless the caller has them parsed), announce the call
    (its card starts here), and settle the definition it will run; a problem is the output the
    model reads."""
    entry = turn.state.catalogue.get(call.name)
    spec = entry[0] if entry else None
    arguments, problem = checked(parsed) if parsed is not None else parse_arguments(call.arguments)
    turn.emit(
        ToolCallBegin(
            call_id=call.call_id,
            tool=call.name,
            server=spec.server if spec else None,
            raw_tool=spec.raw_name if spec else None,
            title=spec.display_name if spec else None,
            arguments=arguments,
            raw_arguments=call.arguments,
            entry=turn.entry,
        )
    )
    turn.state.begun[call.call_id] = time.perf_counter()
    if entry is None:
        return ToolResult.error(f"unknown tool {call.name!r}; {_available(turn.state.catalogue)}")
    if arguments is None:
        return ToolResult.error(f"could not call {call.name}: {problem}.")
    current = await definition_to_run(turn.asks, *entry)
    if isinstance(current, str):
        return ToolResult.error(f"could not call {call.name}: {current}")
    return _Resolved(current, entry[1], arguments)


def _withheld(resolved: _Resolved, arguments: dict[str, Any]) -> ToolResult | None:
    """The refusal of a call whose arguments hold a secret its source must not be sent; checked
    before any approval (a panel never offers it, ``full-auto`` never runs it) and again on
    arguments a person edited."""
    reason = resolved.provider.withheld(resolved.spec, arguments)
    return ToolResult.error(reason) if reason is not None else None


async def _approve(turn: TurnContext, call: FunctionCall, resolved: _Resolved) -> dict[str, Any] | ToolResult:
    """The arguments to run with (the user may have edited them), or why the call does not run.
    Raises ``AbortTurn`` when the user chose "abort turn"."""
    spec = resolved.spec
    outcome = await turn.asks.decide(
        spec,
        resolved.arguments,
        call_id=call.call_id,
        turn_id=turn.turn_id,
        policy=turn.policy,
        interactive=turn.interactive(),
        timeout=turn.settings.approval_timeout_sec,
        preview=lambda: resolved.provider.preview(spec, resolved.arguments),
    )
    if outcome.decision == "abort":
        raise AbortTurn(f"aborted by the user at the approval of {spec.display_name}")
    if not outcome.runs:
        note = f" Reason: {outcome.message}" if outcome.message else ""
        who = "The user denied this call" if outcome.by == "user" else "This call was not approved"
        return ToolResult.error(f"{who}; it did not run.{note}")
    return outcome.arguments


async def _run(turn: TurnContext, call: FunctionCall, resolved: _Resolved, arguments: dict[str, Any]) -> ToolResult:
    """Run the approved call; its progress goes out as events, a provider that raises still
    yields a result."""
    spec = resolved.spec
    info = CallInfo(
        thread_id=turn.thread.id, turn_id=turn.turn_id, call_id=call.call_id, traceparent=span_of(turn.trace_id)
    )

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        turn.emit(Progress(call_id=call.call_id, progress=progress, total=total, message=message))

    try:
        with events_to(turn.emit):
            return await resolved.provider.call_tool(spec, arguments, info, on_progress)
    except Exception as exc:  # boundary: a provider that raises still yields an output
        return ToolResult.error(f"{spec.display_name} failed: {type(exc).__name__}: {exc}")


ASK_TO_LEAVE_SANDBOX: tuple[Policy, ...] = ("on-request", "untrusted")
"""The policies under which a call the sandbox refused is offered to the person to run outside it."""


async def _outside_after_denial(
    turn: TurnContext, call: FunctionCall, resolved: _Resolved, arguments: dict[str, Any], result: ToolResult
) -> ToolResult:
    """Codex's retry without the sandbox: a sandboxed call the sandbox refused is offered to the
    person to run again outside it, the ask saying what was denied; it runs only if they approve.
    Under ``never`` and ``full-auto`` (and when no one can answer) the model reads the denial and
    may ask for escalated permissions itself."""
    meta = result.meta or {}
    denial = meta.get(SANDBOX_DENIAL)
    if not isinstance(denial, str):
        return result
    turn.emit(SandboxDenied(call_id=call.call_id, tool=call.name, sandbox=str(meta.get(SANDBOX_USED, "")), denied=denial))
    if turn.policy not in ASK_TO_LEAVE_SANDBOX:
        return result
    if not resolved.spec.sandboxed or escalation(resolved.spec, arguments) is not None:
        return result
    why = f"the sandbox refused it ({denial}); run it again outside the sandbox"
    outside = {**arguments, ESCALATE: True, JUSTIFICATION: why}
    approved = await _approve(turn, call, _Resolved(resolved.spec, resolved.provider, outside))
    if isinstance(approved, ToolResult):
        note = TextBlock(text="It was not run again outside the sandbox: that was not approved.")
        return result.model_copy(update={"content": [*result.content, note]})
    if (refused := _withheld(resolved, approved)) is not None:
        return refused
    return await _run(turn, call, resolved, approved)


def _finish(turn: TurnContext, call: FunctionCall, result: ToolResult, status: Status, started: float) -> FunctionCallOutput:
    """The output the model reads (capped), the content the rollout keeps (capped), and the
    event that ends the call's card."""
    output = FunctionCallOutput(
        turn_id=turn.turn_id,
        call_id=call.call_id,
        output=to_model_output(result, turn.settings.tool_output_max_bytes),
        is_error=result.is_error,
        status=status,
        content=_cap_for_rollout(result, turn.settings.rollout_output_max_bytes),
        structured=result.structured,
        undo=result.undo,
        duration_ms=(duration_ms := (time.perf_counter() - started) * 1000),
    )
    turn.emit(
        ToolCallEnd(  # the output's own fields, not a dump of them validated again
            call_id=output.call_id, tool=call.name, output=output.output, is_error=output.is_error,
            status=output.status, duration_ms=duration_ms, content=output.content,
            structured=output.structured,
        )
    )
    return output


async def execute_call(turn: TurnContext, call: FunctionCall, arguments: dict[str, Any] | None = None) -> FunctionCallOutput:
    """Resolve, approve, run, finish; ``arguments`` are ``call.arguments`` parsed, when the
    caller has them so (an outside call). The duration counts from the run, once approved: a
    human's wait is not the tool's."""
    started = time.perf_counter()
    resolved = await _resolve(turn, call, arguments)
    if isinstance(resolved, ToolResult):
        return _finish(turn, call, resolved, "failed", started)
    if (refused := _withheld(resolved, resolved.arguments)) is not None:
        return _finish(turn, call, refused, "denied", started)
    approved = await _approve(turn, call, resolved)
    if isinstance(approved, ToolResult):
        return _finish(turn, call, approved, "denied", started)
    if approved is not resolved.arguments and (refused := _withheld(resolved, approved)) is not None:
        return _finish(turn, call, refused, "denied", started)  # a person edited a secret in
    await before_change(turn, resolved.spec)
    started = time.perf_counter()
    result = await _run(turn, call, resolved, approved)
    result = await _outside_after_denial(turn, call, resolved, approved, result)
    return _finish(turn, call, result, "failed" if result.is_error else "completed", started)
