"""Ops: everything a front end can ask of a session (the submission half of the queue pair)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import Field, TypeAdapter

from nbagent.protocol._base import ProtocolModel, UnicodeText, new_id

Entry = Literal["magic", "python", "cli", "mcp_server", "notebook_server"]
"""Which front end started a turn; recorded with every turn."""

OUTSIDE_ENTRY: Final[Entry] = "notebook_server"
"""The entry of a call from outside any model turn (an outside agent through ``%agent serve``,
``Session.call_tool``): front ends show it where such calls appear, not in a turn's view."""

Policy = Literal["untrusted", "on-request", "never", "full-auto"]
POLICIES: tuple[Policy, ...] = get_args(Policy)
"""Every policy, in the order usage lines and ``--policy`` choices name them."""

Decision = Literal["approve", "approve_session", "always", "deny", "abort"]

DECISIONS_THAT_RUN: frozenset[Decision] = frozenset({"approve", "approve_session", "always"})
"""The decisions under which the call runs; every other one means it does not."""

AnsweredBy = Literal["user", "policy", "remembered", "timeout", "unanswered", "interrupt"]
"""Who or what resolved an ask (an approval or a server's question). Nobody answering is never a
decision: ``timeout`` when no answer came in time, ``unanswered`` when the front end that put the
ask knew at once that none would come (the client it asks failed or left)."""


class UserTurn(ProtocolModel):
    """Start a turn. Answered by ``turn_started`` ... ``turn_completed`` | ``turn_aborted``."""

    type: Literal["user_turn"] = "user_turn"
    prompt: str
    turn_id: str = Field(default_factory=lambda: new_id("turn"))
    entry: Entry = "python"
    model: str | None = None
    """Overrides the session's model for this turn only."""
    policy: Policy | None = None
    """Overrides the session's approval policy for this turn only."""
    interactive: bool | None = None
    """Whether someone can answer asks during this turn; ``None``: the session's setting."""
    ask_timeout_sec: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Seconds an ask of this turn waits before it is settled as unanswered (``by: timeout``),
    when sooner than the session's timeouts: a front end that knows nobody may be there (a
    headless run) bounds its own turns."""


class ApprovalDecision(ProtocolModel):
    """Answer an ``approval_requested``. Answered by ``approval_resolved``."""

    type: Literal["approval_decision"] = "approval_decision"
    call_id: str
    decision: Decision
    message: UnicodeText | None = None
    """For ``deny``: what the model is told (free text the record, the panel and the model are
    all sent: one that cannot be encoded must not fail the decision it comes with)."""
    arguments: dict[str, Any] | None = None
    """Edited arguments; when given, these are what runs and what is recorded."""


class ElicitationResponse(ProtocolModel):
    """Answer an ``elicitation_requested``. Answered by ``elicitation_resolved``, or by a
    ``warning`` naming the field when ``content`` does not match the requested schema."""

    type: Literal["elicitation_response"] = "elicitation_response"
    request_id: str
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


class Interrupt(ProtocolModel):
    """Cancel the running turn, or the named one whether running or still queued. Answered by
    ``turn_aborted``; pending asks are denied."""

    type: Literal["interrupt"] = "interrupt"
    reason: str = "interrupted"
    turn_id: str | None = None


class Shutdown(ProtocolModel):
    """Interrupt, stop MCP servers, close the rollout. Answered by ``shutdown_complete``."""

    type: Literal["shutdown"] = "shutdown"


Op = Annotated[UserTurn | ApprovalDecision | ElicitationResponse | Interrupt | Shutdown, Field(discriminator="type")]
OpAdapter: TypeAdapter[Op] = TypeAdapter(Op)

Submit = Callable[[Op], object]
"""How a front end's widgets and views hand an op to the session."""
