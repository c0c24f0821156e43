"""Questions to a human: pending approvals and elicitations, their answers, timeouts and records.

Every ask ends in exactly one recorded answer (user, policy, remembered, timeout or interrupt),
so a call that needs approval can never run without one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from nbagent.config import ApprovedDefinition
from nbagent.core.approval import (
    ApprovalMemory,
    Outcome,
    PendingApproval,
    ask_reason,
    changed_parts,
    changed_since,
    fingerprint,
)
from nbagent.core.bus import EventBus
from nbagent.mcp.checks import answer_problems, argument_problems
from nbagent.mcp.elicitation import ElicitOutcome, apply_defaults
from nbagent.protocol import (
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequested,
    ApprovalResolved,
    ElicitationRecord,
    ElicitationRequested,
    ElicitationResolved,
    ElicitationResponse,
    Item,
    Policy,
    ToolSpec,
    WarningEvent,
)
from nbagent.textsafe import describe_for_display, is_link_url

Record = Callable[[Item], None]


class ApprovalDesk:
    def __init__(
        self,
        bus: EventBus,
        record: Record,
        on_always: Callable[[ToolSpec], str | None],
        recorded_always: Callable[[ToolSpec], ApprovedDefinition | None] = lambda spec: None,
    ) -> None:
        self._bus = bus
        self._record = record
        self._on_always = on_always
        self.recorded_always = recorded_always
        """The definition an "always" in the config approved for this tool, if one did."""
        self.memory = ApprovalMemory()
        self.pending: dict[str, PendingApproval] = {}

    async def decide(
        self,
        spec: ToolSpec,
        arguments: dict[str, Any],
        *,
        call_id: str,
        turn_id: str,
        policy: Policy,
        interactive: bool,
        timeout: float | None,
    ) -> Outcome:
        remembered, changed = self.memory.check(spec)
        stale = False
        recorded = None if remembered or spec.approval_mode != "approve" else self.recorded_always(spec)
        if recorded is not None:
            what = changed_parts(recorded, fingerprint(spec))
            if what is not None:
                stale = True
                changed = changed_since("You chose 'Always' for this tool earlier", what)
        reason = ask_reason(spec, policy, remembered, always_stale=stale)
        if reason is None:
            if remembered:
                return self._resolve(spec, call_id, turn_id, Outcome("approve", "remembered", arguments))
            return Outcome("approve", "policy", arguments)
        request = ApprovalRequested(
            call_id=call_id,
            tool=spec.name,
            server=spec.server,
            raw_tool=spec.raw_name,
            title=spec.display_name,
            description=describe_for_display(spec.description),
            arguments=arguments,
            input_schema=spec.input_schema or spec.parameters,
            annotations=spec.annotations,
            reason=reason,
            changed=changed,
        )
        if policy == "never" or not interactive:
            # No one can answer: no live request is shown, only its recorded resolution.
            why = "policy 'never'" if policy == "never" else "no front end is attached to ask"
            message = f"This call needs approval ({reason}) and {why}: it was declined without running."
            message += f" {changed}" if changed else ""
            return self._resolve(spec, call_id, turn_id, Outcome("deny", "policy", arguments, message))
        pending = PendingApproval(request=request, spec=spec, turn_id=turn_id)
        self.pending[call_id] = pending  # before the event, so a subscriber may answer at once
        self._bus.emit(request, turn_id=turn_id)
        try:
            async with asyncio.timeout(timeout):
                answer = await asyncio.shield(pending.future)
        except TimeoutError:
            return self._resolve(
                spec, call_id, turn_id, Outcome("deny", "timeout", arguments, f"No answer within {timeout:g} s.")
            )
        except asyncio.CancelledError:
            self._resolve(spec, call_id, turn_id, Outcome("deny", "interrupt", arguments, "The turn was interrupted."))
            raise
        finally:
            self.pending.pop(call_id, None)
        outcome = Outcome(answer.decision, "user", answer.arguments or arguments, answer.message)
        if answer.decision in ("approve_session", "always"):
            self.memory.remember(spec)
        if answer.decision == "always":
            written = self._on_always(spec)
            if written:
                self._bus.emit(WarningEvent(message=f"'always' for {spec.display_name} written to {written}"), turn_id=turn_id)
        return self._resolve(spec, call_id, turn_id, outcome)

    def answer(self, op: ApprovalDecision) -> bool:
        """Apply a front end's decision; ``False`` (with a warning) when it cannot apply."""
        pending = self.pending.get(op.call_id)
        if pending is None or pending.future.done():
            self._bus.emit(WarningEvent(message=f"no pending approval with call id {op.call_id!r}"))
            return False
        if op.arguments is not None:
            problems = argument_problems(pending.spec.input_schema or pending.spec.parameters, op.arguments)
            if problems:
                self._bus.emit(
                    WarningEvent(message=f"edited arguments for {op.call_id} rejected: " + "; ".join(problems)),
                    turn_id=pending.turn_id,
                )
                return False
        pending.future.set_result(op)
        return True

    def cancel_all(self) -> None:
        """Deny every pending ask (interrupt, shutdown): the waiting call records it and ends."""
        for pending in self.pending.values():
            if not pending.future.done():
                pending.future.cancel()

    def _resolve(self, spec: ToolSpec, call_id: str, turn_id: str, outcome: Outcome) -> Outcome:
        self._record(
            ApprovalRecord(
                turn_id=turn_id,
                call_id=call_id,
                tool=spec.name,
                server=spec.server,
                raw_tool=spec.raw_name,
                decision=outcome.decision,
                by=outcome.by,
                message=outcome.message,
                arguments=outcome.arguments,
            )
        )
        self._bus.emit(
            ApprovalResolved(
                call_id=call_id,
                decision=outcome.decision,
                by=outcome.by,  # type: ignore[arg-type]
                message=outcome.message,
                arguments=outcome.arguments,
            ),
            turn_id=turn_id,
        )
        return outcome


class ElicitationDesk:
    def __init__(self, bus: EventBus, record: Record) -> None:
        self._bus = bus
        self._record = record
        self.pending: dict[str, tuple[ElicitationRequested, str | None, asyncio.Future[tuple[ElicitOutcome, str]]]] = {}

    async def ask(
        self, request: ElicitationRequested, *, turn_id: str | None, policy: Policy, interactive: bool, timeout: float
    ) -> ElicitOutcome:
        if request.mode == "url" and not is_link_url(request.url):
            # Never shown as a link (a javascript: or data: URL runs in the page): declined, and
            # the user is told what was refused.
            shown = describe_for_display(repr(request.url or ""))[:200]
            message = f"MCP server {request.server!r} asked to open {shown}, which is not an https/http link: declined"
            self._bus.emit(WarningEvent(message=message), turn_id=turn_id)
            return self._resolve(request, turn_id, ElicitOutcome(action="decline"), "policy")
        if policy == "never" or not interactive:
            self._bus.emit(request, turn_id=turn_id)
            return self._resolve(request, turn_id, ElicitOutcome(action="decline"), "policy")
        future: asyncio.Future[tuple[ElicitOutcome, str]] = asyncio.get_running_loop().create_future()
        self.pending[request.request_id] = (request, turn_id, future)
        self._bus.emit(request, turn_id=turn_id)
        try:
            async with asyncio.timeout(timeout):
                outcome, by = await asyncio.shield(future)
        except TimeoutError:
            return self._resolve(request, turn_id, ElicitOutcome(action="cancel"), "timeout")
        except asyncio.CancelledError:
            self._resolve(request, turn_id, ElicitOutcome(action="cancel"), "interrupt")
            raise
        finally:
            self.pending.pop(request.request_id, None)
        return self._resolve(request, turn_id, outcome, by)

    def answer(self, op: ElicitationResponse) -> bool:
        entry = self.pending.get(op.request_id)
        if entry is None or entry[2].done():
            self._bus.emit(WarningEvent(message=f"no pending elicitation with request id {op.request_id!r}"))
            return False
        request, turn_id, future = entry
        content = op.content
        if op.action == "accept" and request.mode == "form":
            schema = request.requested_schema or {"type": "object", "properties": {}}
            content = apply_defaults(schema, op.content or {})
            problems = answer_problems(schema, content)
            if problems:
                self._bus.emit(
                    WarningEvent(message=f"answer to {request.server}'s question refused: " + "; ".join(problems)),
                    turn_id=turn_id,
                )
                return False
        future.set_result((ElicitOutcome(action=op.action, content=content if op.action == "accept" else None), "user"))
        return True

    def cancel_all(self) -> None:
        """Answer every pending question with ``cancel`` (interrupt, shutdown)."""
        for *_, future in self.pending.values():
            if not future.done():
                future.set_result((ElicitOutcome(action="cancel"), "interrupt"))

    def _resolve(
        self, request: ElicitationRequested, turn_id: str | None, outcome: ElicitOutcome, by: str
    ) -> ElicitOutcome:
        self._record(
            ElicitationRecord(
                turn_id=turn_id,
                request_id=request.request_id,
                server=request.server,
                action=outcome.action,
                by=by,
                content=outcome.content,
            )
        )
        self._bus.emit(
            ElicitationResolved(
                request_id=request.request_id,
                action=outcome.action,
                by=by,  # type: ignore[arg-type]
                content=outcome.content,
            ),
            turn_id=turn_id,
        )
        return outcome
