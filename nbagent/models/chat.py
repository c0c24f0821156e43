"""Chat Completions client (streaming) for OpenAI-compatible servers: Ollama, vLLM, llama.cpp,
LM Studio. These differ in small ways, so the stream parser is lenient where they differ:
tool-call ids may come only on the first chunk or never, a whole call may arrive in one chunk,
usage may be missing, and some servers reject ``stream_options``.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import openai

from nbagent.models._wire import INTEGER, OBJECT, STRING, arguments, get_field, not_a_stream, objects, typed
from nbagent.models.base import (
    Completed,
    ModelEvent,
    ModelRequest,
    ReasoningDone,
    ReasoningSummaryDelta,
    TextDelta,
    ToolCallDone,
    Usage,
)
from nbagent.models.endpoint import Endpoint, HttpModel
from nbagent.models.retry import RetryPolicy, StreamFailure
from nbagent.protocol import AssistantMessage, FunctionCall, FunctionCallOutput, Item, ToolSpec, UndoItem, UserMessage

CUT_SHORT = ("length", "content_filter")
"""Finish reasons of a reply that stopped before its end (Responses says ``response.incomplete``)."""


def to_messages(instructions: str | None, items: list[Item]) -> list[dict[str, Any]]:
    """Project history onto chat messages; consecutive calls join the assistant message before them."""
    messages: list[dict[str, Any]] = []
    if instructions:
        messages.append({"role": "system", "content": instructions})
    for item in items:
        if isinstance(item, UserMessage | UndoItem):  # an undo is said to the model as the user
            messages.append({"role": "user", "content": item.text})
        elif isinstance(item, AssistantMessage):
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant" and not last["content"]:
                # Text recorded after the calls of the same response: one message, so the
                # tool messages still follow the assistant message that holds the calls.
                last["content"] = item.text
            else:
                messages.append({"role": "assistant", "content": item.text})
        elif isinstance(item, FunctionCall):
            function = {"name": item.name, "arguments": item.arguments}
            call = {"id": item.call_id, "type": "function", "function": function}
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)
            else:
                messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif isinstance(item, FunctionCallOutput):
            messages.append({"role": "tool", "tool_call_id": item.call_id, "content": item.output})
    return messages


def to_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    out = []
    for tool in tools:
        function: dict[str, Any] = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
        if tool.strict:
            function["strict"] = True
        out.append({"type": "function", "function": function})
    return out


@dataclass
class _Call:
    """One tool call being assembled from chunks."""

    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class _ToolCalls:
    """Accumulates tool calls by ``index``, tolerating servers that omit ``index`` or ``id``."""

    def __init__(self) -> None:
        self.calls: dict[int, _Call] = {}

    def _slot(self, index: int | None, call_id: str | None) -> _Call:
        if index is None:
            # No index: a new id starts a new call, otherwise continue the last one.
            last = max(self.calls) if self.calls else -1
            if last < 0 or (call_id and self.calls[last].id not in (None, call_id)):
                index = last + 1
            else:
                index = last
        call = self.calls.get(index)
        if call is not None and call_id and call.id and call.id != call_id and call.arguments:
            # Some servers reuse index 0 for every call: a different id means a new call.
            index = max(self.calls) + 1
            call = None
        if call is None:
            call = self.calls[index] = _Call()
        return call

    def add(self, raw: Any, at: str = "") -> None:
        function = typed(raw, "function", OBJECT, at)
        call_id = typed(raw, "id", STRING, at)
        call = self._slot(typed(raw, "index", INTEGER, at), call_id)
        if call_id and call.id is None:
            call.id = call_id
        name = typed(function, "name", STRING, f"{at}function.")
        if name and not call.name:
            call.name = name
        if args := arguments(function, f"{at}function."):
            call.arguments.append(args)

    def done(self) -> list[ToolCallDone]:
        out = []
        for index in sorted(self.calls):
            call = self.calls[index]
            call_id = call.id or f"call_{uuid.uuid4().hex[:24]}"
            # A call of a tool without parameters often comes with no argument text at all.
            arguments = "".join(call.arguments) or "{}"
            out.append(ToolCallDone(call_id=call_id, name=call.name, arguments=arguments))
        return out


def _usage(raw: Any) -> Usage:
    prompt = typed(raw, "prompt_tokens_details", OBJECT, "usage.")
    completion = typed(raw, "completion_tokens_details", OBJECT, "usage.")
    return Usage(
        input_tokens=typed(raw, "prompt_tokens", INTEGER, "usage.") or 0,
        cached_input_tokens=typed(prompt, "cached_tokens", INTEGER, "usage.prompt_tokens_details.") or 0,
        output_tokens=typed(raw, "completion_tokens", INTEGER, "usage.") or 0,
        reasoning_output_tokens=typed(completion, "reasoning_tokens", INTEGER, "usage.completion_tokens_details.") or 0,
        total_tokens=typed(raw, "total_tokens", INTEGER, "usage."),
    )


class _DoneSeen:
    """Wraps the SDK's event decoder of one stream to see its ``data: [DONE]``, which the SDK
    consumes without a trace (it offers no public way to tell that the stream came to its end)."""

    def __init__(self, stream: Any) -> None:
        self.decoder: Any = getattr(stream, "_decoder", None)  # the SDK's private decoder, untyped
        self.seen = self.decoder is None
        """An SDK release without the decoder cannot show the end: then it is not required."""
        if self.decoder is not None:
            stream._decoder = self

    async def aiter_bytes(self, iterator: AsyncIterator[bytes]) -> AsyncIterator[Any]:
        async for event in self.decoder.aiter_bytes(iterator):
            self.seen = self.seen or event.data.startswith("[DONE]")
            yield event


class ChatModel(HttpModel):
    """``wire_api = "chat"``: ``POST /chat/completions`` with ``stream=True``."""

    wire_api = "chat"
    path = "/chat/completions"

    def __init__(self, model: str, endpoint: Endpoint | None = None, *, retry: RetryPolicy | None = None) -> None:
        super().__init__(model, endpoint, retry=retry)
        self.label = f"{model} (Chat Completions at {self.endpoint.base_url})"
        self.send_stream_options = True
        """Turned off for good when a server rejects ``stream_options`` (then usage may be absent)."""

    def build_params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": to_messages(request.instructions, request.items),
        }
        if request.tools:
            params["tools"] = to_tools(request.tools)
            if not request.parallel_tool_calls:
                params["parallel_tool_calls"] = False
        return params

    async def _create(self, params: dict[str, Any]) -> Any:
        if self.send_stream_options:
            try:
                return await self._client.chat.completions.create(
                    **params, stream=True, stream_options={"include_usage": True}
                )
            except openai.BadRequestError as exc:
                if "stream_options" not in str(exc) and "include_usage" not in str(exc):
                    raise
                self.send_stream_options = False
        return await self._client.chat.completions.create(**params, stream=True)

    async def _once(self, params: dict[str, Any]) -> AsyncGenerator[ModelEvent, None]:
        stream = await self._create(params)
        done = _DoneSeen(stream)
        calls = _ToolCalls()
        texts: list[str] = []
        reasoning: list[str] = []
        usage: Usage | None = None
        finish: str | None = None
        reasoning_done = False
        try:
            async for chunk in stream:
                if (raw_usage := typed(chunk, "usage", OBJECT)) is not None:
                    usage = _usage(raw_usage)
                for n, choice in enumerate(objects(chunk, "choices")):
                    at = f"choices[{n}]."
                    finish = typed(choice, "finish_reason", STRING, at) or finish
                    delta = typed(choice, "delta", OBJECT, at)
                    if delta is None:
                        continue
                    thought = get_field(delta, "reasoning_content") or get_field(delta, "reasoning")
                    if isinstance(thought, str) and thought:
                        reasoning.append(thought)
                        yield ReasoningSummaryDelta(delta=thought)
                    content = typed(delta, "content", STRING, f"{at}delta.")
                    tool_calls = objects(delta, "tool_calls", f"{at}delta.")
                    if reasoning and not reasoning_done and (content or tool_calls):
                        reasoning_done = True
                        yield ReasoningDone(summary="".join(reasoning))
                    if content:
                        texts.append(content)
                        yield TextDelta(delta=content)
                    for k, raw_call in enumerate(tool_calls):
                        calls.add(raw_call, f"{at}delta.tool_calls[{k}].")
        finally:
            await stream.close()
        if finish in CUT_SHORT:
            raise StreamFailure.stopped_early(finish)
        if finish is None and not done.seen:
            # Servers differ in which end they send ([DONE], a finish_reason or both); neither
            # means the reply was cut off, or was never a stream.
            ended = "the stream ended before its last chunk ([DONE] / finish_reason)"
            raise not_a_stream(stream) or StreamFailure(ended)
        if reasoning and not reasoning_done:
            yield ReasoningDone(summary="".join(reasoning))
        for call in calls.done():
            yield call
        if usage is not None:
            yield usage
        yield Completed(text="".join(texts))
