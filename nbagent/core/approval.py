"""The approval engine (DESIGN §5): whether a call needs a human, what is remembered, and the desk
that asks and records every answer.

The rule, as one table:

================  =====================================================================
policy            a call runs without asking when
================  =====================================================================
``full-auto``     always
``untrusted``     it was approved for this session (its definition unchanged)
``on-request``    remembered; or mode ``approve`` (for an "always", only while the definition
``never``         it approved is unchanged); or mode ``auto`` with a trusted source whose
                  annotations say read-only and not destructive
================  =====================================================================

Under ``never`` (and whenever no front end can ask) a call that would ask is declined
instead, and the model is told so. Annotations are hints from possibly untrusted servers:
they relax the default only when the source is trusted. Remembered approvals are bound to
the tool's definition, so a changed tool asks again and says what changed.

A sandboxed tool (``ToolSpec.sandboxed``: ``shell``) follows Codex's rule instead: a call that
stays in the sandbox runs without asking (under ``untrusted`` it asks unless remembered); one
that asks for escalated permissions always asks (but under ``full-auto``), so under ``never`` it
is declined; one the sandbox refused may be offered to the person to run again outside it
(``core/tool_call.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from nbagent.config import ApprovedDefinition
from nbagent.core.bus import EventBus
from nbagent.core.pending import PendingAsks, Record, Resolution, no_one_to_answer
from nbagent.mcp.checks import argument_problems
from nbagent.protocol import (
    DECISIONS_THAT_RUN,
    AnsweredBy,
    ApprovalDecision,
    ApprovalRecord,
    ApprovalRequested,
    ApprovalResolved,
    Decision,
    PatchChange,
    Policy,
    ToolSpec,
    WarningEvent,
)
from nbagent.protocol.tools import RawIdentity
from nbagent.schema import definition_hash
from nbagent.textsafe import describe_for_display

PARTS = {"description": "description", "input_schema": "input schema", "annotations": "annotations", "title": "title"}
"""The parts of a definition an approval is bound to, and how a changed one is named."""


def identity(spec: ToolSpec) -> RawIdentity:
    return (spec.server, spec.raw_name or spec.name)


def known_safe(spec: ToolSpec) -> bool:
    annotations = spec.annotations
    if not spec.trusted or annotations is None:
        return False
    return annotations.read_only_hint is True and annotations.destructive_hint is not True


def fingerprint(spec: ToolSpec) -> ApprovedDefinition:
    """One hash per part of the definition, so a change can be named part by part."""
    schema = spec.input_schema if spec.input_schema is not None else spec.parameters
    return ApprovedDefinition(
        description=definition_hash(spec.description, None, None),
        input_schema=definition_hash(None, schema, None),
        annotations=definition_hash(None, None, spec.annotations),
        title=definition_hash(None, None, None, title=spec.title or ""),
    )


def changed_parts(approved: ApprovedDefinition, current: ApprovedDefinition) -> str | None:
    """``"description, input schema"``: what differs, or ``None`` when nothing does (a part
    ``approved`` did not record is not compared)."""
    parts = [
        label for name, label in PARTS.items()
        if getattr(approved, name) is not None and getattr(approved, name) != getattr(current, name)
    ]
    return ", ".join(parts) or None


ESCALATE = "with_escalated_permissions"
"""Codex's argument by which a call of a sandboxed tool asks to run outside the sandbox."""
JUSTIFICATION = "justification"
"""Codex's argument saying why, shown to the person asked."""
SANDBOX_DENIAL = "nbagent/sandbox_denial"
"""Key of a sandboxed tool's ``ToolResult.meta``: what the sandbox refused the call (the line
naming the path or host), so the person can be offered to run it again outside."""
SANDBOX_USED = "nbagent/sandbox"
"""Beside ``SANDBOX_DENIAL``: the sandbox the call ran in, as the model is told."""


def escalation(spec: ToolSpec, arguments: dict[str, Any]) -> str | None:
    """Why a call of a sandboxed tool asks to run outside the sandbox ("" when it gives no
    reason); ``None`` when it stays inside (or the tool is not sandboxed)."""
    if not spec.sandboxed or arguments.get(ESCALATE) is not True:
        return None
    justification = arguments.get(JUSTIFICATION)
    return justification.strip() if isinstance(justification, str) else ""


def _sandboxed_reason(policy: Policy, remembered: bool, escalated: str | None) -> str | None:
    """Codex's rule for a tool that runs in the sandbox: inside it a call needs no approval
    (but under ``untrusted``); a call that asks to leave it always asks (a remembered approval
    covers the sandboxed calls only), so under ``never`` it is declined."""
    if escalated is not None:
        said = f": {escalated}" if escalated else " (it gives no reason)"
        return f"it asks to run outside the sandbox{said}"
    if policy == "untrusted" and not remembered:
        return "policy 'untrusted' asks before every call"
    return None


def ask_reason(
    spec: ToolSpec, policy: Policy, remembered: bool, *, always_stale: bool = False, escalated: str | None = None
) -> str | None:
    """Why this call must be asked about, or ``None`` when it may run as is.

    ``always_stale``: its ``approve`` mode is an "always" recorded for another definition.
    ``escalated``: a sandboxed tool's call asks to run outside the sandbox, for this reason.
    """
    if policy == "full-auto":
        return None
    if spec.sandboxed:
        return _sandboxed_reason(policy, remembered, escalated)
    if remembered:
        return None
    if policy == "untrusted":
        return "policy 'untrusted' asks before every call"
    if spec.approval_mode == "approve":
        return "its definition changed since 'Always' was chosen for it" if always_stale else None
    if spec.approval_mode == "prompt":
        return "this tool's approval_mode is 'prompt'"
    if spec.approval_mode == "writes":  # the person chose to take this server's readOnlyHint at its word
        return None if spec.read_only else "this tool's approval_mode is 'writes' and it does not say it is read-only"
    if known_safe(spec):
        return None
    annotations = spec.annotations
    if annotations is not None and annotations.destructive_hint:
        return "the tool says it is destructive"
    if annotations is None or annotations.read_only_hint is None:
        return "the tool does not say it is read-only"
    if annotations.read_only_hint is False:
        return "the tool says it is not read-only"
    return "the tool says it is read-only, but its server is not marked trusted"


class ApprovalMemory:
    """Approvals for this session, keyed by raw identity and bound to the definition hash."""

    def __init__(self) -> None:
        self._approved: dict[RawIdentity, ToolSpec] = {}

    def check(self, spec: ToolSpec) -> tuple[bool, str | None]:
        """``(remembered, changed)``: ``changed`` says what differs when a new definition
        dropped the memory."""
        key = identity(spec)
        approved = self._approved.get(key)
        if approved is None:
            return False, None
        if approved.definition_hash == spec.definition_hash:
            return True, None
        del self._approved[key]
        what = changed_parts(fingerprint(approved), fingerprint(spec)) or "definition"
        return False, changed_since("You approved this tool earlier", what)

    def knows(self, spec: ToolSpec) -> bool:
        """Whether ``check`` would let this definition run, without forgetting a stale one."""
        approved = self._approved.get(identity(spec))
        return approved is not None and approved.definition_hash == spec.definition_hash

    def remember(self, spec: ToolSpec) -> None:
        self._approved[identity(spec)] = spec

    def definitions(self) -> frozenset[tuple[RawIdentity, str]]:
        """Each remembered tool's identity with the definition it was approved with."""
        return frozenset((key, spec.definition_hash) for key, spec in self._approved.items())


def changed_since(approval: str, what: str) -> str:
    """The note an ask carries when a remembered approval stopped applying."""
    return f"{approval}, but its server has changed its {what} since; the earlier approval no longer applies."


def edit_problems(request: ApprovalRequested, arguments: Any) -> list[str]:
    """Why arguments a person edited cannot replace the model's (empty when they can): the one
    check for the panel before it sends and for the desk before it accepts."""
    return argument_problems(request.input_schema, arguments)


@dataclass(frozen=True)
class ApprovalOutcome:
    """How the approval of one call ended; ``arguments`` are what runs (possibly edited)."""

    decision: Decision
    by: AnsweredBy
    arguments: dict[str, Any]
    message: str | None = None

    @property
    def runs(self) -> bool:
        return self.decision in DECISIONS_THAT_RUN


class ApprovalDesk(PendingAsks[ApprovalRequested, ApprovalDecision]):
    """Decides each call from the table and the memory; asks a person when the table says so."""

    noun = "approval with call id"

    def __init__(
        self,
        bus: EventBus,
        record: Record,
        on_always: Callable[[ToolSpec], str | None],
        recorded_always: Callable[[ToolSpec], ApprovedDefinition | None] = lambda spec: None,
    ) -> None:
        super().__init__(bus, record)
        self._on_always = on_always
        self.recorded_always = recorded_always
        """The definition an "always" in the config approved for this tool, if one did."""
        self.memory = ApprovalMemory()
        self._specs: dict[str, ToolSpec] = {}

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
        preview: Callable[[], Awaitable[list[PatchChange]]] | None = None,
    ) -> ApprovalOutcome:
        """``preview``: what the call would change, read only when a person is to be asked."""
        remembered, changed = self.memory.check(spec)
        recorded = None if remembered or spec.approval_mode != "approve" else self.recorded_always(spec)
        what = changed_parts(recorded, fingerprint(spec)) if recorded is not None else None
        if what is not None:
            changed = changed_since("You chose 'Always' for this tool earlier", what)
        escalated = escalation(spec, arguments)
        reason = ask_reason(spec, policy, remembered, always_stale=what is not None, escalated=escalated)
        if reason is None and not remembered:
            return ApprovalOutcome("approve", "policy", arguments)  # needs no approval: nothing to record
        asked = reason is not None and no_one_to_answer(policy, interactive) is None  # a person will see it
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
            reason=reason or "",
            changed=changed,
            changes=await self._changes(spec, preview, turn_id) if asked else [],
        )
        self._specs[call_id] = spec
        try:
            if reason is None:
                answer = ApprovalDecision(call_id=call_id, decision="approve")
                resolution = self.resolve(request, Resolution(answer, "remembered"), turn_id)
            else:
                resolution = await self.await_answer(
                    call_id, request, turn_id=turn_id, policy=policy, interactive=interactive, timeout=timeout
                )
        finally:
            self._specs.pop(call_id, None)
        if resolution.by == "interrupt":
            raise asyncio.CancelledError("the turn was interrupted")  # the call ends with its turn
        answer = resolution.answer
        # ``{}`` is an edit too: every argument removed
        kept = arguments if answer.arguments is None else answer.arguments
        return ApprovalOutcome(answer.decision, resolution.by, kept, resolution.message)

    async def _changes(
        self, spec: ToolSpec, preview: Callable[[], Awaitable[list[PatchChange]]] | None, turn_id: str
    ) -> list[PatchChange]:
        """The call's changes for the ask to show; when they cannot be read the ask goes on
        without them and a warning says why."""
        if preview is None:
            return []
        try:
            return await preview()
        except Exception as exc:  # a source's failure to tell must not stop the ask
            why = str(exc) or type(exc).__name__
            self._bus.emit(WarningEvent(message=f"what {spec.display_name} would change cannot be shown: {why}"), turn_id=turn_id)
        return []

    def answer(self, op: ApprovalDecision) -> str | None:
        """Apply a front end's decision; why not (with a warning) when it cannot apply."""
        request = self.waiting(op.call_id)
        if request is None:
            return self.not_waiting(op.call_id)
        if op.arguments is not None and (problems := edit_problems(request, op.arguments)):
            return self.refuse(op.call_id, f"edited arguments for {op.call_id} rejected: " + "; ".join(problems))
        return self.user_answered(op.call_id, op, op.message, op.by)

    def fallback(self, request: ApprovalRequested, by: AnsweredBy) -> ApprovalDecision:
        return ApprovalDecision(call_id=request.call_id, decision="deny")

    def declined(self, request: ApprovalRequested, why: str) -> str:
        message = f"This call needs approval ({request.reason}) and {why}: it was declined without running."
        return message + (f" {request.changed}" if request.changed else "")

    def resolve(
        self, request: ApprovalRequested, resolution: Resolution[ApprovalDecision], turn_id: str | None
    ) -> Resolution[ApprovalDecision]:
        """The answer's record first, so nothing after it (a config file that cannot be written)
        can lose a decision once made; then what it keeps ("for this session", "always")."""
        super().resolve(request, resolution, turn_id)
        decision, spec = resolution.answer.decision, self._specs[request.call_id]
        if resolution.by in ("user", "code") and decision in ("approve_session", "always"):
            self.memory.remember(spec)
        if resolution.by in ("user", "code") and decision == "always" and (written := self._on_always(spec)):
            self._bus.emit(
                WarningEvent(message=f"'always' for {spec.display_name} written to {written}"), turn_id=turn_id
            )
        return resolution

    def records(
        self, request: ApprovalRequested, resolution: Resolution[ApprovalDecision], turn_id: str | None
    ) -> tuple[ApprovalRecord, ApprovalResolved]:
        answer, by, message = resolution.answer, resolution.by, resolution.message
        arguments = request.arguments if answer.arguments is None else answer.arguments
        record = ApprovalRecord(
            turn_id=turn_id,
            call_id=request.call_id,
            tool=request.tool,
            server=request.server,
            raw_tool=request.raw_tool,
            decision=answer.decision,
            by=by,
            message=message,
            arguments=arguments,
        )
        resolved = ApprovalResolved(
            call_id=request.call_id, decision=answer.decision, by=by, message=message, arguments=arguments
        )
        return record, resolved
