"""What a tool is and what a call returns, as the core, the MCP client and the front ends share it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import Field

from nbagent.protocol._base import ProtocolModel

ApprovalMode = Literal["auto", "prompt", "writes", "approve"]
"""Per-server / per-tool mode (Codex's): decide from annotations, always ask, ask unless the tool
says it is read-only, or never ask."""

ToolSource = Literal["native", "python", "mcp"]

RawIdentity = tuple[str | None, str]
"""``(server, tool name as its source gave it)``: what routing, approvals and the rollout key on
(DESIGN §3); the server is ``None`` for native and Python tools."""

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
"""``(progress, total, message)``: a running call reports progress through it; it feeds
``progress`` events and a tool card's bar."""


class ToolAnnotations(ProtocolModel):
    """MCP tool annotations. Hints from a possibly untrusted server, never guarantees."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class ToolSpec(ProtocolModel):
    """One entry of the catalogue the model sees.

    ``name`` is the model-visible name (``^[a-zA-Z0-9_-]{1,64}$``); ``(server, raw_name)`` is
    the raw identity that routing, approvals and the rollout use.
    """

    name: str
    """Model-visible name; the only key the model uses to call the tool."""
    description: str = ""
    """Description exactly as the model sees it."""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """Sanitised JSON Schema of the arguments (what the model sees)."""
    input_schema: dict[str, Any] | None = None
    """The original, unsanitised schema (validation of edited arguments uses it)."""
    output_schema: dict[str, Any] | None = None
    source: ToolSource = "python"
    server: str | None = None
    """MCP server name; ``None`` for native and Python tools."""
    raw_name: str = ""
    """Tool name exactly as its source gave it."""
    title: str | None = None
    annotations: ToolAnnotations | None = None
    approval_mode: ApprovalMode = "auto"
    """Effective mode after config (per-tool over per-server over default)."""
    trusted: bool = False
    """Whether annotations may relax the default (set by the user per server; True for own tools)."""
    sandboxed: bool = False
    """Each call runs in the OS sandbox unless its arguments ask for escalated permissions
    (Codex's ``with_escalated_permissions``): the approval rule of a sandboxed tool (DESIGN §5)."""
    definition_hash: str = ""
    """Hash of description, schema, annotations and title: remembered approvals are bound to it."""
    strict: bool = False
    warnings: list[str] = Field(default_factory=list)
    """What sanitising the schema had to change or drop."""
    deferred: bool = False
    """The schema the model sees is not made yet: ``parameters``, ``strict`` and ``warnings``
    are placeholders until the tool first goes into a model request (a catalogue larger than
    ``max_model_tools`` sanitises each schema then; ``ToolRouter.for_model``)."""

    @property
    def display_name(self) -> str:
        """Title, then annotation title, then raw name (DESIGN §3)."""
        if self.title:
            return self.title
        if self.annotations and self.annotations.title:
            return self.annotations.title
        return self.raw_name or self.name

    @property
    def read_only(self) -> bool:
        return bool(self.annotations and self.annotations.read_only_hint)


class TextBlock(ProtocolModel):
    type: Literal["text"] = "text"
    text: str


class ImageBlock(ProtocolModel):
    type: Literal["image"] = "image"
    data: str
    """Base64 data."""
    mime_type: str = "image/png"


class ResourceBlock(ProtocolModel):
    type: Literal["resource"] = "resource"
    uri: str
    mime_type: str | None = None
    text: str | None = None
    name: str | None = None


ContentBlock = TextBlock | ImageBlock | ResourceBlock


class ToolResult(ProtocolModel):
    """What a tool call produced, before truncation for the model."""

    content: list[ContentBlock] = Field(default_factory=list)
    structured: Any | None = None
    is_error: bool = False
    meta: dict[str, Any] | None = None
    undo: dict[str, Any] | None = None
    """What undoing the call needs that the model must not read (a deleted cell's outputs):
    kept in the rollout only, as ``FunctionCallOutput.undo``."""

    @classmethod
    def text(cls, text: str, *, is_error: bool = False) -> ToolResult:
        return cls(content=[TextBlock(text=text)], is_error=is_error)

    @classmethod
    def error(cls, text: str) -> ToolResult:
        return cls.text(text, is_error=True)


class CallInfo(ProtocolModel):
    """Who is calling: passed to every tool source with each call (becomes MCP ``_meta``)."""

    thread_id: str
    turn_id: str
    call_id: str
    traceparent: str | None = None
    """W3C trace context; one trace id per turn."""
