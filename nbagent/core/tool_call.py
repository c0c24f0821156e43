"""One tool call, from the model's request to the output it reads: parse, approve, run, wrap.

Nothing here raises into the turn except cancellation and an explicit "abort turn": malformed
arguments, unknown tools, denials and crashing tools all become outputs the model can read.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from nbagent.core.provider import ChangingToolProvider, ToolProvider
from nbagent.mcp.meta import new_traceparent
from nbagent.mcp.results import to_model_output
from nbagent.protocol import (
    CallInfo,
    FunctionCall,
    FunctionCallOutput,
    Progress,
    TextBlock,
    ToolCallBegin,
    ToolCallEnd,
    ToolResult,
    ToolSpec,
)

if TYPE_CHECKING:
    from nbagent.core.session import Session
    from nbagent.core.turn import TurnContext


class AbortTurn(Exception):
    """The user chose "abort turn" at an approval."""


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """``(arguments, problem)``: the model's JSON string as an object, or why it is not one."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"the arguments are not valid JSON ({exc.msg} at position {exc.pos}): {raw[:200]!r}"
    if not isinstance(value, dict):
        return None, f"the arguments must be a JSON object, got {type(value).__name__}"
    return value, None


def _cap_for_rollout(result: ToolResult, max_bytes: int) -> list:
    kept, used = [], 0
    for block in result.content:
        size = len(getattr(block, "text", None) or getattr(block, "data", None) or "")
        if used + size > max_bytes:
            kept.append(TextBlock(text=f"[{len(result.content) - len(kept)} more block(s) not kept: rollout cap]"))
            break
        kept.append(block)
        used += size
    return kept


async def definition_to_run(session: Session, spec: ToolSpec, provider: ToolProvider) -> ToolSpec | str:
    """The definition the call will run, which the approval is checked against: a source with a
    change announced waits for its re-list, and an "always" from the config lists again first
    (a server may change a tool between sessions without saying so)."""
    if not isinstance(provider, ChangingToolProvider):
        return spec
    return await provider.current_definition(spec, relist=session.approvals.recorded_always(spec) is not None)


async def execute_call(turn: TurnContext, call: FunctionCall) -> FunctionCallOutput:
    session = turn.session
    entry = turn.catalogue.get(call.name)
    spec = entry[0] if entry else None
    arguments, problem = parse_arguments(call.arguments)
    session.emit(
        ToolCallBegin(
            call_id=call.call_id,
            tool=call.name,
            server=spec.server if spec else None,
            raw_tool=spec.raw_name if spec else None,
            title=spec.display_name if spec else None,
            arguments=arguments,
            raw_arguments=call.arguments,
            entry=turn.entry,
        ),
        turn_id=turn.turn_id,
    )
    turn.begun[call.call_id] = time.perf_counter()
    started = time.perf_counter()  # reset once approved: a human's wait is not the tool's duration
    status = "completed"
    if entry is None:
        names = ", ".join(sorted(turn.catalogue)) or "none"
        result = ToolResult.error(f"unknown tool {call.name!r}; the available tools are: {names}")
        status = "failed"
    elif arguments is None:
        result = ToolResult.error(f"could not call {call.name}: {problem}. Send the arguments as a JSON object.")
        status = "failed"
    elif isinstance(current := await definition_to_run(session, *entry), str):
        result = ToolResult.error(f"could not call {call.name}: {current}")
        status = "failed"
    else:
        spec, provider = current, entry[1]
        outcome = await session.approvals.decide(
            spec,
            arguments,
            call_id=call.call_id,
            turn_id=turn.turn_id,
            policy=turn.policy,
            interactive=session.interactive,
            timeout=session.config.approval_timeout_sec,
        )
        if outcome.decision == "abort":
            raise AbortTurn(f"aborted by the user at the approval of {spec.display_name}")
        if not outcome.runs:
            note = f" Reason: {outcome.message}" if outcome.message else ""
            who = "The user denied this call" if outcome.by == "user" else "This call was not approved"
            result = ToolResult.error(f"{who}; it did not run.{note}")
            status = "denied"
        else:
            info = CallInfo(
                thread_id=session.thread_id,
                turn_id=turn.turn_id,
                call_id=call.call_id,
                traceparent=new_traceparent(turn.trace_id),
            )

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                session.emit(
                    Progress(call_id=call.call_id, progress=progress, total=total, message=message),
                    turn_id=turn.turn_id,
                )

            started = time.perf_counter()
            try:
                result = await provider.call_tool(spec, outcome.arguments, info, on_progress)
            except Exception as exc:  # boundary: a provider that raises still yields an output
                result = ToolResult.error(f"{spec.display_name} failed: {type(exc).__name__}: {exc}")
            if result.is_error:
                status = "failed"
    output = FunctionCallOutput(
        turn_id=turn.turn_id,
        call_id=call.call_id,
        output=to_model_output(result, session.config.tool_output_max_bytes),
        is_error=result.is_error,
        status=status,  # type: ignore[arg-type]
        content=_cap_for_rollout(result, session.config.rollout_output_max_bytes),
        structured=result.structured,
        duration_ms=(time.perf_counter() - started) * 1000,
    )
    fields = output.model_dump(include={"call_id", "output", "is_error", "status", "content", "structured"})
    session.emit(ToolCallEnd(tool=call.name, duration_ms=output.duration_ms, **fields), turn_id=turn.turn_id)
    return output
