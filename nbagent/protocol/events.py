"""Events: everything a session does, on one stream (the event half of the queue pair).

An emitted ``Event`` is an envelope (``seq``, ``thread_id``, ``turn_id``, ``at``) around one
``EventMsg`` payload. Producers anywhere (core, MCP client) build only the payload; the bus
alone builds the envelope, so a payload never changes after it is made (both are frozen).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import ConfigDict, Field, model_serializer, model_validator

from nbagent.protocol._base import ProtocolModel, now
from nbagent.protocol.ops import AnsweredBy, Decision, Entry, Policy
from nbagent.protocol.tools import ContentBlock, ToolAnnotations, ToolSpec


class _Msg(ProtocolModel):
    """One event's payload: what happened, never where or when (that is the envelope's)."""

    model_config = ConfigDict(frozen=True)


class SessionConfigured(_Msg):
    type: Literal["session_configured"] = "session_configured"
    model: str
    model_label: str
    """How front ends must present the model: a scripted model is never called AI."""
    scripted: bool = False
    policy: Policy
    cwd: str
    thread_name: str | None = None
    resumed_items: int = 0


class TurnStarted(_Msg):
    type: Literal["turn_started"] = "turn_started"
    prompt: str
    entry: Entry
    model: str
    policy: Policy


class AgentMessageDelta(_Msg):
    type: Literal["agent_message_delta"] = "agent_message_delta"
    item_id: str
    delta: str


class AgentMessage(_Msg):
    type: Literal["agent_message"] = "agent_message"
    item_id: str
    text: str


class ReasoningDelta(_Msg):
    type: Literal["reasoning_delta"] = "reasoning_delta"
    item_id: str
    delta: str


class Reasoning(_Msg):
    type: Literal["reasoning"] = "reasoning"
    item_id: str
    text: str


class ToolCallBegin(_Msg):
    type: Literal["tool_call_begin"] = "tool_call_begin"
    call_id: str
    tool: str
    """Model-visible name."""
    server: str | None = None
    raw_tool: str | None = None
    title: str | None = None
    arguments: dict[str, Any] | None = None
    """Parsed arguments; ``None`` when the model sent malformed JSON (see ``raw_arguments``)."""
    raw_arguments: str = ""
    entry: Entry | None = None
    """Which front end's turn made the call (``notebook_server`` for an outside agent)."""


class ToolCallEnd(_Msg):
    type: Literal["tool_call_end"] = "tool_call_end"
    call_id: str
    tool: str
    output: str
    """Exactly what the model sees."""
    is_error: bool = False
    status: Literal["completed", "failed", "denied", "aborted"] = "completed"
    duration_ms: float = 0.0
    content: list[ContentBlock] = Field(default_factory=list)
    structured: Any | None = None


class ApprovalRequested(_Msg):
    type: Literal["approval_requested"] = "approval_requested"
    call_id: str
    tool: str
    server: str | None = None
    raw_tool: str | None = None
    title: str | None = None
    description: str = ""
    """The description the model saw, invisible characters made visible."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    input_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    reason: str = ""
    """Why approval is needed (policy, mode, annotations)."""
    changed: str | None = None
    """Set when a remembered approval was dropped because the tool's definition changed."""
    changes: list[PatchChange] = Field(default_factory=list)
    """What the call would change (a file, a notebook cell), diffed against what is there when the
    approval is asked; Codex's ``ApplyPatchApprovalRequest`` carries the same ``changes``."""


class ApprovalResolved(_Msg):
    type: Literal["approval_resolved"] = "approval_resolved"
    call_id: str
    decision: Decision
    by: AnsweredBy
    message: str | None = None
    arguments: dict[str, Any] | None = None


class ElicitationRequested(_Msg):
    type: Literal["elicitation_requested"] = "elicitation_requested"
    request_id: str
    server: str
    mode: Literal["form", "url"] = "form"
    message: str
    requested_schema: dict[str, Any] | None = None
    url: str | None = None
    call_id: str | None = None
    """The tool call during which the server asked, when known."""


class ElicitationResolved(_Msg):
    type: Literal["elicitation_resolved"] = "elicitation_resolved"
    request_id: str
    action: Literal["accept", "decline", "cancel"]
    by: Literal["user", "code", "policy", "timeout", "unanswered", "interrupt"]
    """``AnsweredBy`` but ``remembered``: a server's question is never answered from memory."""
    content: dict[str, Any] | None = None
    message: str | None = None
    """Why no person answered, when none did (no one could be asked, a timeout, unanswered)."""


class McpStartupUpdate(_Msg):
    type: Literal["mcp_startup_update"] = "mcp_startup_update"
    server: str
    status: Literal["starting", "ready", "failed", "cancelled", "stopped"]
    error: str | None = None
    stderr_tail: str | None = None
    tools: int = 0
    protocol_version: str | None = None


class McpStartupComplete(_Msg):
    type: Literal["mcp_startup_complete"] = "mcp_startup_complete"
    ready: list[str] = Field(default_factory=list)
    failed: list[str] = Field(default_factory=list)


class McpToolsChanged(_Msg):
    type: Literal["mcp_tools_changed"] = "mcp_tools_changed"
    server: str
    tools: int


class McpLoginRequired(_Msg):
    """A server needs the person to sign in: ``url`` is the authorization link, shown (never
    opened by itself) so they can follow it in their browser; a loopback callback completes it."""

    type: Literal["mcp_login_required"] = "mcp_login_required"
    server: str
    url: str


class McpLoginCompleted(_Msg):
    """The sign-in that ``McpLoginRequired`` asked for ended with tokens; none are carried."""

    type: Literal["mcp_login_completed"] = "mcp_login_completed"
    server: str


class McpLog(_Msg):
    type: Literal["mcp_log"] = "mcp_log"
    server: str
    level: str
    logger: str | None = None
    data: Any = None


class Progress(_Msg):
    type: Literal["progress"] = "progress"
    call_id: str
    progress: float
    total: float | None = None
    message: str | None = None


class ExecCommandOutputDelta(_Msg):
    """A piece of what a running command wrote (Codex's event): its call's card shows the output
    as it comes, before the call ends."""

    type: Literal["exec_command_output_delta"] = "exec_command_output_delta"
    call_id: str
    stream: Literal["stdout", "stderr"]
    chunk: str


class SandboxDenied(_Msg):
    """The sandbox refused something a call's command tried (a path written, a host reached),
    as far as the runtime can tell from what the command wrote: its card says so, the audit log
    records it, and under ``untrusted`` / ``on-request`` the person is offered to run it again
    outside."""

    type: Literal["sandbox_denied"] = "sandbox_denied"
    call_id: str
    tool: str
    sandbox: str
    """The sandbox it ran in, as the model is told (``workspace-write, network off``)."""
    denied: str
    """What was refused, in the command's own words (the path or host it names)."""


class PatchChange(ProtocolModel):
    """What a patch does to one file, as ``patch_apply_begin``/``_end`` carry it."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["add", "update", "delete", "move"]
    path: str
    """As the patch names it, relative to the workspace."""
    move_path: str | None = None
    unified_diff: str = ""
    old_hash: str | None = None
    """sha256 of the file before (``None``: it did not exist)."""
    new_hash: str | None = None
    """sha256 of the file after (``None``: it no longer exists)."""
    note: str = ""
    """What else the change does, in words: a notebook cell's outputs kept or cleared."""


class PatchApplyBegin(_Msg):
    """An ``apply_patch`` call, checked against the files, is about to write them (Codex's
    event): every file's change, before any is written."""

    type: Literal["patch_apply_begin"] = "patch_apply_begin"
    call_id: str
    changes: list[PatchChange] = Field(default_factory=list)


class PatchApplyEnd(_Msg):
    """The patch was written (``success``) or nothing was (Codex's event)."""

    type: Literal["patch_apply_end"] = "patch_apply_end"
    call_id: str
    success: bool
    stdout: str = ""
    stderr: str = ""
    changes: list[PatchChange] = Field(default_factory=list)


class TokenUsage(ProtocolModel):
    """Tokens of one or more model requests, by Codex's names (``TokenUsage``). ``input_tokens``
    includes the ``cached_input_tokens`` the server read from its prompt cache, and
    ``output_tokens`` the ``reasoning_output_tokens``, as both APIs count them."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_output_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(**{k: getattr(self, k) + getattr(other, k) for k in TokenUsage.model_fields})


class TokenUsageInfo(ProtocolModel):
    """Codex's ``TokenUsageInfo``: the thread's tokens so far and the last request's."""

    model_config = ConfigDict(frozen=True)

    total_token_usage: TokenUsage
    """Every request of the thread, resumed turns included."""
    last_token_usage: TokenUsage
    model_context_window: int | None = None


class TokenCount(_Msg):
    """After each model request that reported usage (Codex's ``token_count`` event)."""

    type: Literal["token_count"] = "token_count"
    info: TokenUsageInfo | None = None


class TurnCompleted(_Msg):
    type: Literal["turn_completed"] = "turn_completed"
    last_message: str = ""


class TurnAborted(_Msg):
    type: Literal["turn_aborted"] = "turn_aborted"
    reason: str


class TurnFailed(_Msg):
    """The end of a turn that could not finish (a model error, a bad config, a full disk, an
    internal fault); the message says why."""

    type: Literal["turn_failed"] = "turn_failed"
    message: str
    code: str = "error"
    """Stable kind: ``auth``, ``bad_base_url``, ``unknown_model``, ``context_length``,
    ``rate_limit``, ``server``, ``replay_exhausted``, ``config``, ``storage``, ``internal``..."""


TERMINAL_TYPES = frozenset({"turn_completed", "turn_aborted", "turn_failed"})
"""Every turn ends with exactly one event of these types, and nothing of it follows."""


class ErrorEvent(_Msg):
    """A problem that ends no turn (a model that cannot be made when the thread opens)."""

    type: Literal["error"] = "error"
    message: str
    code: str = "error"


class UndoCompleted(_Msg):
    """Codex's ``undo_completed``: a turn undone (``success``), or why not; ``message`` says which
    files were restored, or which later turn or changed file stopped it."""

    type: Literal["undo_completed"] = "undo_completed"
    success: bool
    message: str
    undone_turn_id: str | None = None
    restored: list[str] = Field(default_factory=list)


class ContextCompacted(_Msg):
    """The model's view was shortened to fit its context window (the rollout keeps everything)."""

    type: Literal["context_compacted"] = "context_compacted"
    tokens_before: int
    tokens_after: int
    summarized: int = 0
    """Items the model now sees as one summary."""
    shortened: int = 0
    """Tool outputs the model now sees as a stub."""
    reason: Literal["limit", "context_length", "asked"] = "limit"


class WarningEvent(_Msg):
    type: Literal["warning"] = "warning"
    message: str


class ShutdownComplete(_Msg):
    type: Literal["shutdown_complete"] = "shutdown_complete"


class ServerStatus(ProtocolModel):
    """One MCP server as it is now (``%agent mcp``, ``nbagent mcp list``)."""

    name: str
    state: Literal["starting", "ready", "failed", "stopped", "disabled"]
    transport: str
    protocol_version: str | None = None
    tools: int = 0
    """Enabled tools the server offers (0 unless ready)."""
    error: str | None = None
    stderr_tail: str | None = None
    pid: int | None = None
    log_path: str | None = None
    required: bool = False


class McpListToolsResponse(_Msg):
    """Answers ``list_mcp_tools``: the catalogue the model sees and each server's status."""

    type: Literal["mcp_list_tools_response"] = "mcp_list_tools_response"
    tools: list[ToolSpec] = Field(default_factory=list)
    servers: dict[str, ServerStatus] = Field(default_factory=dict)


class ThreadRenamed(_Msg):
    type: Literal["thread_renamed"] = "thread_renamed"
    name: str


class ThreadList(_Msg):
    """Answers ``list_threads``: each a ``ThreadSummary`` (``nbagent.store``), newest first."""

    type: Literal["thread_list"] = "thread_list"
    threads: list[Any] = Field(default_factory=list)


class McpOffers(_Msg):
    """Answers ``read_mcp_offers``: the resources or prompts asked for, as text."""

    type: Literal["mcp_offers"] = "mcp_offers"
    kind: Literal["resources", "prompts"]
    text: str


class InspectResult(_Msg):
    """Answers ``inspect``: the view asked for (``nbagent.core.inspect``'s models or the wire's
    messages), or ``None`` when there is none yet."""

    type: Literal["inspect_result"] = "inspect_result"
    view: str
    data: Any = None


EventMsg = Annotated[
    SessionConfigured
    | TurnStarted
    | AgentMessageDelta
    | AgentMessage
    | ReasoningDelta
    | Reasoning
    | ToolCallBegin
    | ToolCallEnd
    | ApprovalRequested
    | ApprovalResolved
    | ElicitationRequested
    | ElicitationResolved
    | McpStartupUpdate
    | McpStartupComplete
    | McpToolsChanged
    | McpLoginRequired
    | McpLoginCompleted
    | McpLog
    | Progress
    | PatchApplyBegin
    | PatchApplyEnd
    | ExecCommandOutputDelta
    | SandboxDenied
    | TokenCount
    | ContextCompacted
    | UndoCompleted
    | TurnCompleted
    | TurnAborted
    | TurnFailed
    | ErrorEvent
    | WarningEvent
    | ShutdownComplete
    | McpListToolsResponse
    | ThreadRenamed
    | ThreadList
    | McpOffers
    | InspectResult,
    Field(discriminator="type"),
]

_ENVELOPE = ("seq", "thread_id", "turn_id", "at")
_PAYLOADS = frozenset(get_args(get_args(EventMsg)[0]))
"""Every payload type: an instance of one needs no validation to be an event's ``msg``."""


class Event(ProtocolModel):
    """One emitted event: where and when (``seq``, ``thread_id``, ``turn_id``, ``at``) around
    what (``msg``). Built by the bus only; a front end that shows an ending it made itself (a
    session that never opened) builds one with ``seq`` 0.

    On the wire (``nbagent run --json``) the envelope is flat, ``{"seq", "thread_id",
    "turn_id", "at", "type", ...payload}``, the shape events had before they had an envelope."""

    model_config = ConfigDict(frozen=True)

    seq: int = 0
    """Monotonically increasing per session; 0 for an event no bus emitted."""
    thread_id: str = ""
    turn_id: str | None = None
    """Set on every event that belongs to a turn."""
    at: float = Field(default_factory=now)
    msg: EventMsg

    @classmethod
    def wrap(cls, msg: EventMsg, *, seq: int = 0, thread_id: str = "", turn_id: str | None = None) -> Event:
        """The envelope of an already valid payload, made as ``model_construct`` makes a model but
        without its walk over the fields (Python, dearer than validating): the bus emits several
        events per tool call, and the envelope's values are its own. Anything but an instance of
        a payload type is validated as ``Event(...)`` validates it."""
        if cls is not Event or type(msg) not in _PAYLOADS:
            return cls(seq=seq, thread_id=thread_id, turn_id=turn_id, at=now(), msg=msg)
        values = {"seq": seq, "thread_id": thread_id, "turn_id": turn_id, "at": now(), "msg": msg}
        event = object.__new__(cls)
        object.__setattr__(event, "__dict__", values)
        object.__setattr__(event, "__pydantic_fields_set__", set(values))
        object.__setattr__(event, "__pydantic_extra__", None)
        object.__setattr__(event, "__pydantic_private__", None)
        return event

    @model_validator(mode="before")
    @classmethod
    def _unflatten(cls, data: Any) -> Any:
        if isinstance(data, dict) and "msg" not in data:
            envelope = {k: data[k] for k in _ENVELOPE if k in data}
            return {**envelope, "msg": {k: v for k, v in data.items() if k not in _ENVELOPE}}
        return data

    @model_serializer(mode="wrap")
    def _flatten(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        msg = data.pop("msg")
        return {**data, **msg}
