"""Inner asks (approvals, elicitations) as outer elicitations, and the outer answers as Ops.

An approval becomes a small form (a decision choice plus an optional reason); an inner
elicitation is forwarded with its own schema untouched, so the outer client renders exactly
what the inner server asked for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types as types

from nbagent.kit.diffview import changes_text
from nbagent.protocol import (
    ApprovalDecision,
    ApprovalRequested,
    ElicitationRequested,
    ElicitationResponse,
    Op,
)
from nbagent.textsafe import describe_for_display, link_notes, one_line

DECISIONS: list[tuple[str, str]] = [
    ("approve", "Approve once"),
    ("approve_session", "Approve for this session"),
    ("deny", "Deny"),
    ("abort", "Deny and stop the turn"),
]

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "decision": {
            "type": "string",
            "title": "Decision",
            "oneOf": [{"const": value, "title": title} for value, title in DECISIONS],
        },
        "reason": {"type": "string", "title": "Reason (told to the model when you deny)"},
    },
    "required": ["decision"],
}


@dataclass(frozen=True)
class Ask:
    """One pending inner question: an approval (keyed by call id) or an elicitation (request id)."""

    kind: Literal["approval", "elicitation"]
    key: str
    event: ApprovalRequested | ElicitationRequested

    @property
    def wire_key(self) -> str:
        """The key under ``inputRequests``; unique per thread and stable across rounds."""
        return f"{self.kind}:{self.key}"


def approval_message(event: ApprovalRequested) -> str:
    """What the outer user reads: the tool, where it comes from, why, the exact arguments, and
    what it would change (a file's or a cell's diff, long ones cut)."""
    where = f" from MCP server {event.server!r} (tool {event.raw_tool!r})" if event.server else ""
    # The model's arguments may carry bidi controls from untrusted text: show them, never apply them.
    args = describe_for_display(json.dumps(event.arguments, ensure_ascii=False, sort_keys=True))
    if len(args) > 2000:
        args = args[:2000] + f"... [{len(args) - 2000} more chars]"
    name = one_line(event.title or event.tool)
    lines = [f"nbagent asks to run {name}{where}.", f"Arguments: {args}"]
    if event.reason:
        lines.append(f"Why approval is needed: {event.reason}")
    if event.description:
        lines.append(f"Tool description (untrusted): {one_line(event.description[:500])}")
    if event.changed:
        lines.append(f"Changed since last approval: {event.changed}")
    if event.changes:
        lines.append("What it would change, diffed against what is there now:\n" + changes_text(event.changes))
    return "\n".join(lines)


def elicit_params(ask: Ask, *, url_ok: bool) -> types.ElicitRequestFormParams | types.ElicitRequestURLParams | None:
    """The outer ``elicitation/create`` params for one ask; ``None`` when it cannot be asked."""
    event = ask.event
    if isinstance(event, ApprovalRequested):
        return types.ElicitRequestFormParams(message=approval_message(event), requested_schema=APPROVAL_SCHEMA)
    # The server's own words, multi-line by right, but with bidi and control characters shown.
    message = f"MCP server {event.server!r} asks: " + describe_for_display(event.message)
    if event.mode == "url":
        if not url_ok or not event.url:
            return None
        # The client shows the URL as it likes: the host and any warning travel in the words too.
        message = "\n".join([message, *link_notes(event.url)])
        return types.ElicitRequestURLParams(message=message, url=event.url, elicitation_id=event.request_id)
    schema = event.requested_schema or {"type": "object", "properties": {}}
    return types.ElicitRequestFormParams(message=message, requested_schema=schema)


CANNOT_ASK = types.ElicitResult(action="cancel")
"""The reply for a question the client cannot be shown (a URL to a client without URL mode)."""


def answer_op(ask: Ask, result: types.ElicitResult) -> Op:
    """The Op that answers ``ask`` given the outer client's reply."""
    if ask.kind == "approval":
        if result.action != "accept":
            return ApprovalDecision(call_id=ask.key, decision="deny",
                                    message=f"The MCP client's user said no ({result.action}).")
        content = result.content or {}
        decision = str(content.get("decision") or "deny")
        if decision not in {value for value, _ in DECISIONS}:
            decision = "deny"
        reason = content.get("reason")
        message = str(reason) if reason else None
        if decision == "deny" and not message:
            message = "Denied by the MCP client's user."
        return ApprovalDecision(call_id=ask.key, decision=decision, message=message)  # type: ignore[arg-type]  # decision checked against DECISIONS above
    answer = dict(result.content) if result.action == "accept" and result.content is not None else None
    if result.action == "accept" and answer is None:
        answer = {}
    return ElicitationResponse(request_id=ask.key, action=result.action, content=answer)
