"""The approval engine (DESIGN §5): whether a call needs a human, and the record of every answer.

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
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from nbagent.config import ApprovedDefinition
from nbagent.mcp.schema import definition_hash
from nbagent.protocol import ApprovalDecision, ApprovalRequested, Decision, Policy, ToolSpec

RawIdentity = tuple[str | None, str]
PARTS = {"description": "description", "input_schema": "input schema", "annotations": "annotations"}
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
    )


def changed_parts(approved: ApprovedDefinition, current: ApprovedDefinition) -> str | None:
    """``"description, input schema"``: what differs, or ``None`` when nothing does."""
    parts = [label for name, label in PARTS.items() if getattr(approved, name) != getattr(current, name)]
    return ", ".join(parts) or None


def ask_reason(spec: ToolSpec, policy: Policy, remembered: bool, *, always_stale: bool = False) -> str | None:
    """Why this call must be asked about, or ``None`` when it may run as is.

    ``always_stale``: its ``approve`` mode is an "always" recorded for another definition.
    """
    if policy == "full-auto":
        return None
    if remembered:
        return None
    if policy == "untrusted":
        return "policy 'untrusted' asks before every call"
    if spec.approval_mode == "approve":
        return "its definition changed since 'Always' was chosen for it" if always_stale else None
    if spec.approval_mode == "prompt":
        return "this tool's approval_mode is 'prompt'"
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


@dataclass
class Outcome:
    """A recorded decision; ``arguments`` are what runs (possibly edited)."""

    decision: Decision
    by: str
    arguments: dict[str, Any]
    message: str | None = None

    @property
    def runs(self) -> bool:
        return self.decision in ("approve", "approve_session", "always")


@dataclass
class PendingApproval:
    request: ApprovalRequested
    spec: ToolSpec
    turn_id: str
    future: asyncio.Future[ApprovalDecision] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


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

    def remember(self, spec: ToolSpec) -> None:
        self._approved[identity(spec)] = spec


def changed_since(approval: str, what: str) -> str:
    """The note an ask carries when a remembered approval stopped applying."""
    return f"{approval}, but its server has changed its {what} since; the earlier approval no longer applies."
