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

AnsweredBy = Literal["user", "code", "policy", "remembered", "timeout", "unanswered", "interrupt"]
"""Who or what resolved an ask (an approval or a server's question): ``code`` is notebook code
answering in a person's place (an autopilot), which says so in its op. Nobody answering is never a
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
    by: Literal["user", "code"] = "user"
    """``code`` when code answers in a person's place (an autopilot): the record, the audit log
    and the panel say so, not "by you"."""


class ElicitationResponse(ProtocolModel):
    """Answer an ``elicitation_requested``. Answered by ``elicitation_resolved``, or by a
    ``warning`` naming the field when ``content`` does not match the requested schema."""

    type: Literal["elicitation_response"] = "elicitation_response"
    request_id: str
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None
    by: Literal["user", "code"] = "user"
    """As ``ApprovalDecision.by``."""


class Interrupt(ProtocolModel):
    """Cancel the running turn, or the named one whether running or still queued. Answered by
    ``turn_aborted``; pending asks are denied."""

    type: Literal["interrupt"] = "interrupt"
    reason: str = "interrupted"
    turn_id: str | None = None


class Shutdown(ProtocolModel):
    """Interrupt, stop MCP servers, close the rollout. Answered by ``shutdown_complete``."""

    type: Literal["shutdown"] = "shutdown"


class AskUnanswered(ProtocolModel):
    """Settle a pending approval or server question now as nobody answering: its front end knows
    no answer will come (it cannot show the question, or the client it asked failed or left), so
    the turn goes on without waiting out the timeout. Answered by ``approval_resolved`` or
    ``elicitation_resolved`` with ``by: unanswered``."""

    type: Literal["ask_unanswered"] = "ask_unanswered"
    id: str
    """The ``call_id`` of an approval or the ``request_id`` of a question."""
    reason: UnicodeText


class OverrideTurnContext(ProtocolModel):
    """Change what later turns run with (``%agent policy``); ``None`` keeps a setting. Answered
    by ``session_configured``."""

    type: Literal["override_turn_context"] = "override_turn_context"
    model: str | None = None
    policy: Policy | None = None
    interactive: bool | None = None


class Compact(ProtocolModel):
    """Summarise the thread for the model now; the rollout keeps every item. Answered by
    ``context_compacted``, or a ``warning`` when there is nothing to summarise yet."""

    type: Literal["compact"] = "compact"
    model: str | None = None


class ListMcpTools(ProtocolModel):
    """The catalogue and each MCP server's status, once startup is over. Answered by
    ``mcp_list_tools_response``."""

    type: Literal["list_mcp_tools"] = "list_mcp_tools"
    complete: bool = False
    """Every deferred MCP tool's schema made now (seconds for tens of thousands of tools)."""


class NewThread(ProtocolModel):
    """Start a new thread (the current one stays on disk). Answered by ``session_configured``."""

    type: Literal["new_thread"] = "new_thread"
    name: str | None = None


class ResumeThread(ProtocolModel):
    """Continue a saved thread by id or name. Answered by ``session_configured``."""

    type: Literal["resume_thread"] = "resume_thread"
    thread: str


class RenameThread(ProtocolModel):
    """Name the current thread. Answered by ``thread_renamed``."""

    type: Literal["rename_thread"] = "rename_thread"
    name: str


class ListThreads(ProtocolModel):
    """The saved threads, most recently updated first. Answered by ``thread_list``."""

    type: Literal["list_threads"] = "list_threads"
    limit: int | None = Field(default=50, gt=0)


class AddMcpServer(ProtocolModel):
    """Add (or replace) an MCP server and start it. Answered by ``mcp_startup_update``."""

    type: Literal["add_mcp_server"] = "add_mcp_server"
    name: str
    config: Any
    """An ``McpServerConfig`` (or its mapping)."""


class RemoveMcpServer(ProtocolModel):
    """Stop an MCP server and forget it. Answered by ``mcp_startup_update`` (``stopped``)."""

    type: Literal["remove_mcp_server"] = "remove_mcp_server"
    name: str


class RestartMcpServer(ProtocolModel):
    """Stop an MCP server and start it again. Answered by ``mcp_startup_update``."""

    type: Literal["restart_mcp_server"] = "restart_mcp_server"
    name: str


class ReadMcpOffers(ProtocolModel):
    """What MCP servers offer besides tools: ``resources [SERVER [URI]]`` or ``prompts [SERVER
    [NAME [KEY=VALUE]...]]``. Answered by ``mcp_offers``."""

    type: Literal["read_mcp_offers"] = "read_mcp_offers"
    kind: Literal["resources", "prompts"]
    args: list[str] = Field(default_factory=list)


class Inspect(ProtocolModel):
    """One ``inspect`` view of the live session (DESIGN §12.3): ``tools``, the last model
    ``request``, a ``turn``'s timeline or a server's ``wire``. Answered by ``inspect_result``."""

    type: Literal["inspect"] = "inspect"
    view: Literal["tools", "request", "turn", "wire"]
    turn_id: str | None = None
    server: str | None = None
    last: int | None = None
    all: bool = False
    """``request``: every model request of the last turn still kept, in order, not the last one."""


class CallTool(ProtocolModel):
    """Run one catalogue tool for a caller outside the model (an agent connected through
    ``%agent serve``): same router, approvals, events and cards, not part of the model's history;
    the rollout records it as a turn of its own ``entry``. Answered by ``tool_call_end``."""

    type: Literal["call_tool"] = "call_tool"
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    policy: Policy | None = None
    entry: Entry = "notebook_server"
    interactive: bool | None = None
    """``False``: no one can answer its asks, so each is settled at once; ``None``: the session's."""


class Undo(ProtocolModel):
    """Put the workspace files a turn changed back as they were before it (Codex's ``undo``).
    Refused while a turn runs, when a later turn changed the same files (undo it first), and
    when a file was changed after the turn unless ``force``. Answered by ``undo_completed``."""

    type: Literal["undo"] = "undo"
    turn_id: str | None = None
    """The turn to undo; the latest one that changed files and is not undone yet when unset."""
    force: bool = False
    """Overwrite files changed after the turn (the answer names them)."""
    keep: list[str] = Field(default_factory=list)
    """Workspace files left as they are: the open notebook, whose cells the front end restored
    in the live document (restoring its file too would make the document and its file differ)."""
    cells: list[str] = Field(default_factory=list)
    """The cells the front end restored for this undo, one line each; recorded with it."""
    call_id: str | None = None
    """Undo just this call of the turn (a cell's "Undo" on its provenance badge): its cell only,
    no workspace file, and the turn stays undoable for the rest."""


Op = Annotated[
    UserTurn
    | ApprovalDecision
    | ElicitationResponse
    | AskUnanswered
    | Interrupt
    | Shutdown
    | OverrideTurnContext
    | Compact
    | ListMcpTools
    | NewThread
    | ResumeThread
    | RenameThread
    | ListThreads
    | AddMcpServer
    | RemoveMcpServer
    | RestartMcpServer
    | ReadMcpOffers
    | Inspect
    | CallTool
    | Undo,
    Field(discriminator="type"),
]
OpAdapter: TypeAdapter[Op] = TypeAdapter(Op)

Submit = Callable[[Op], object]
"""How a front end's widgets and views hand an op to the session."""
