"""The one interface every model client implements, and the stream parts it yields.

Model clients know nothing of sessions, tools routing or approvals: they turn a
``ModelRequest`` (a projection of thread state) into a stream of ``ModelEvent``s.

The stream parts are where model output enters the core, whatever the wire: their text fields
are ``UnicodeText``, so a lone surrogate a reply holds (its text, reasoning, a call's name or
id) is U+FFFD before anything shows, records or sends it back. A call's ``arguments`` are not
changed: the core refuses those that are not Unicode text, naming where, for the model to fix.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Literal, Protocol, runtime_checkable

from pydantic import Field

from nbagent.protocol import Item, ProtocolModel, TokenUsage, ToolSpec, UnicodeText, unicode_text


class ModelRequest(ProtocolModel):
    model: str
    instructions: str | None = None
    items: list[Item] = Field(default_factory=list)
    tools: list[ToolSpec] = Field(default_factory=list)
    parallel_tool_calls: bool = True
    purpose: Literal["turn", "compact"] = "turn"
    """``compact``: a request for a summary of ``items`` (a replay script answers it from its
    ``summaries``)."""


class TextDelta(ProtocolModel):
    type: Literal["text_delta"] = "text_delta"
    delta: UnicodeText


class ReasoningSummaryDelta(ProtocolModel):
    type: Literal["reasoning_delta"] = "reasoning_delta"
    delta: UnicodeText


class ReasoningDone(ProtocolModel):
    type: Literal["reasoning_done"] = "reasoning_done"
    summary: UnicodeText
    encrypted_content: UnicodeText | None = None


class ToolCallDone(ProtocolModel):
    """A complete tool call. ``arguments`` is the raw JSON string; the core parses it."""

    type: Literal["tool_call"] = "tool_call"
    call_id: UnicodeText
    """Made unique in the thread by the core (two ids may differ only in what became U+FFFD)."""
    name: UnicodeText
    """Changed this way, it names no tool: the model is told so."""
    arguments: str


class Usage(ProtocolModel):
    """What the server said one response cost, by Codex's names (``TokenUsage``); ``total_tokens``
    is the server's, or input plus output when it gave none."""

    type: Literal["usage"] = "usage"
    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_output_tokens: int = 0
    total_tokens: int | None = None

    def tokens(self) -> TokenUsage:
        """As counted: a negative count (a broken server) counts as none, not as a refund."""
        counts = {k: max(0, getattr(self, k)) for k in TokenUsage.model_fields if k != "total_tokens"}
        total = self.total_tokens if self.total_tokens is not None else self.input_tokens + self.output_tokens
        return TokenUsage(**counts, total_tokens=max(0, total))


class Completed(ProtocolModel):
    """End of one response. ``text`` is the whole assistant message (may be empty)."""

    type: Literal["completed"] = "completed"
    text: UnicodeText = ""


ModelEvent = Annotated[
    TextDelta | ReasoningSummaryDelta | ReasoningDone | ToolCallDone | Usage | Completed,
    Field(discriminator="type"),
]

ModelErrorCode = Literal[
    "auth",
    "bad_base_url",
    "unknown_model",
    "context_length",
    "rate_limit",
    "server",
    "connection",
    "replay_exhausted",
    "bad_request",
    "usage_limit",
    "other",
]


class ModelError(Exception):
    """A request that failed after any retries. ``code`` is stable; ``str()`` is for people.
    The message may quote the server, so it is made Unicode text as a reply's text is: the
    failure is recorded and shown like any other."""

    def __init__(self, code: ModelErrorCode, message: str, *, status: int | None = None) -> None:
        super().__init__(unicode_text(message))
        self.code: ModelErrorCode = code
        self.status = status


@runtime_checkable
class ModelClient(Protocol):
    label: str
    """Shown by front ends, e.g. ``gpt-5.1 (OpenAI Responses)`` or ``scripted replay: demo.json``."""
    scripted: bool
    """True for the replay model: front ends must never present it as AI."""

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Yield the parts of one response, ending with ``Completed``; raise ``ModelError``."""
        ...

    async def aclose(self) -> None: ...
