"""The approval engine (DESIGN §5): whether a call needs a human, and the record of every answer.

The rule, as one table:

================  =====================================================================
policy            a call runs without asking when
================  =====================================================================
``full-auto``     always
``untrusted``     it was approved for this session (its definition unchanged)
``on-request``    remembered; or mode ``approve``; or mode ``auto`` with a trusted
``never``         source whose annotations say read-only and not destructive
================  =====================================================================

Under ``never`` (and whenever no front end can ask) a call that would ask is declined
instead, and the model is told so. Annotations are hints from possibly untrusted servers:
they relax the default only when the source is trusted. Remembered approvals are bound to
the tool's definition hash, so a changed tool asks again and says what changed.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from nbagent.protocol import ApprovalDecision, ApprovalRequested, Decision, Policy, ToolSpec

RawIdentity = tuple[str | None, str]


def identity(spec: ToolSpec) -> RawIdentity:
    return (spec.server, spec.raw_name or spec.name)


def known_safe(spec: ToolSpec) -> bool:
    annotations = spec.annotations
    if not spec.trusted or annotations is None:
        return False
    return annotations.read_only_hint is True and annotations.destructive_hint is not True


def ask_reason(spec: ToolSpec, policy: Policy, remembered: bool) -> str | None:
    """Why this call must be asked about, or ``None`` when it may run as is."""
    if policy == "full-auto":
        return None
    if remembered:
        return None
    if policy == "untrusted":
        return "policy 'untrusted' asks before every call"
    if spec.approval_mode == "approve":
        return None
    if spec.approval_mode == "prompt":
        return "this tool's approval_mode is 'prompt'"
    if known_safe(spec):
        return None
    if spec.annotations is None or spec.annotations.read_only_hint is None:
        return "the tool does not say it is read-only"
    if spec.annotations.destructive_hint:
        return "the tool says it is destructive"
    if not spec.trusted:
        return "the tool says it is read-only, but its server is not marked trusted"
    return "the tool is not read-only"


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
        parts = [
            label
            for label, field_name in (
                ("description", "description"),
                ("input schema", "input_schema"),
                ("annotations", "annotations"),
            )
            if getattr(approved, field_name) != getattr(spec, field_name)
        ]
        what = ", ".join(parts) or "definition"
        return False, (
            f"You approved this tool earlier, but its server has changed its {what} since; "
            "the earlier approval no longer applies."
        )

    def remember(self, spec: ToolSpec) -> None:
        self._approved[identity(spec)] = spec
