"""Events: everything a session does, on one stream (the event half of the queue pair).

The session stamps ``seq``, ``thread_id`` and ``turn_id`` when it emits; producers below the
core (MCP client, model clients) build events without them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter

from nbagent.protocol._base import ProtocolModel, now
from nbagent.protocol.ops import Decision, Entry, Policy
from nbagent.protocol.tools import ContentBlock, ToolAnnotations


class _Event(ProtocolModel):
    seq: int = 0
    """Monotonically increasing per session."""
    thread_id: str = ""
    turn_id: str | None = None
    """Set on every event that belongs to a turn."""
    at: float = Field(default_factory=now)


class SessionConfigured(_Event):
    type: Literal["session_configured"] = "session_configured"
    model: str
    model_label: str
    """How front ends must present the model: a scripted model is never called AI."""
    scripted: bool = False
    policy: Policy
    cwd: str
    thread_name: str | None = None
    resumed_items: int = 0


class TurnStarted(_Event):
    type: Literal["turn_started"] = "turn_started"
    prompt: str
    entry: Entry
    model: str
    policy: Policy


class AgentMessageDelta(_Event):
    type: Literal["agent_message_delta"] = "agent_message_delta"
    item_id: str
    delta: str


class AgentMessage(_Event):
    type: Literal["agent_message"] = "agent_message"
    item_id: str
    text: str


class ReasoningDelta(_Event):
    type: Literal["reasoning_delta"] = "reasoning_delta"
    item_id: str
    delta: str


class Reasoning(_Event):
    type: Literal["reasoning"] = "reasoning"
    item_id: str
    text: str


class ToolCallBegin(_Event):
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


class ToolCallEnd(_Event):
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


class ApprovalRequested(_Event):
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


class ApprovalResolved(_Event):
    type: Literal["approval_resolved"] = "approval_resolved"
    call_id: str
    decision: Decision
    by: Literal["user", "policy", "remembered", "timeout", "interrupt"]
    message: str | None = None
    arguments: dict[str, Any] | None = None


class ElicitationRequested(_Event):
    type: Literal["elicitation_requested"] = "elicitation_requested"
    request_id: str
    server: str
    mode: Literal["form", "url"] = "form"
    message: str
    requested_schema: dict[str, Any] | None = None
    url: str | None = None
    call_id: str | None = None
    """The tool call during which the server asked, when known."""


class ElicitationResolved(_Event):
    type: Literal["elicitation_resolved"] = "elicitation_resolved"
    request_id: str
    action: Literal["accept", "decline", "cancel"]
    by: Literal["user", "policy", "timeout", "interrupt"]
    content: dict[str, Any] | None = None
    message: str | None = None
    """Why no one was asked, when no one could answer."""


class McpStartupUpdate(_Event):
    type: Literal["mcp_startup_update"] = "mcp_startup_update"
    server: str
    status: Literal["starting", "ready", "failed", "cancelled", "stopped"]
    error: str | None = None
    stderr_tail: str | None = None
    tools: int = 0
    protocol_version: str | None = None


class McpStartupComplete(_Event):
    type: Literal["mcp_startup_complete"] = "mcp_startup_complete"
    ready: list[str] = Field(default_factory=list)
    failed: list[str] = Field(default_factory=list)


class McpToolsChanged(_Event):
    type: Literal["mcp_tools_changed"] = "mcp_tools_changed"
    server: str
    tools: int


class McpLog(_Event):
    type: Literal["mcp_log"] = "mcp_log"
    server: str
    level: str
    logger: str | None = None
    data: Any = None


class Progress(_Event):
    type: Literal["progress"] = "progress"
    call_id: str
    progress: float
    total: float | None = None
    message: str | None = None


class TokenUsage(_Event):
    type: Literal["token_usage"] = "token_usage"
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    total_tokens: int = 0


class TurnCompleted(_Event):
    type: Literal["turn_completed"] = "turn_completed"
    last_message: str = ""


class TurnAborted(_Event):
    type: Literal["turn_aborted"] = "turn_aborted"
    reason: str


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    message: str
    code: str = "error"
    """Stable kind: ``auth``, ``bad_base_url``, ``unknown_model``, ``context_length``,
    ``rate_limit``, ``server``, ``replay_exhausted``, ``config``, ``mcp``, ``internal``..."""


class WarningEvent(_Event):
    type: Literal["warning"] = "warning"
    message: str


class ShutdownComplete(_Event):
    type: Literal["shutdown_complete"] = "shutdown_complete"


Event = Annotated[
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
    | McpLog
    | Progress
    | TokenUsage
    | TurnCompleted
    | TurnAborted
    | ErrorEvent
    | WarningEvent
    | ShutdownComplete,
    Field(discriminator="type"),
]
EventAdapter: TypeAdapter[Event] = TypeAdapter(Event)
