"""Chat Completions client (streaming) for OpenAI-compatible servers: Ollama, vLLM, llama.cpp,
LM Studio. These differ in small ways, so the stream parser is lenient where they differ:
tool-call ids may come only on the first chunk or never, a whole call may arrive in one chunk,
usage may be missing, and some servers reject ``stream_options``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import openai

from nbagent.models._wire import get_field
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
from nbagent.models.retry import RetryPolicy
from nbagent.protocol import AssistantMessage, FunctionCall, FunctionCallOutput, Item, ToolSpec, UserMessage


def to_messages(instructions: str | None, items: list[Item]) -> list[dict[str, Any]]:
    """Project history onto chat messages; consecutive calls join the assistant message before them."""
    messages: list[dict[str, Any]] = []
    if instructions:
        messages.append({"role": "system", "content": instructions})
    for item in items:
        if isinstance(item, UserMessage):
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

    def add(self, raw: Any) -> None:
        function = get_field(raw, "function")
        call = self._slot(get_field(raw, "index"), get_field(raw, "id"))
        if get_field(raw, "id") and call.id is None:
            call.id = get_field(raw, "id")
        name = get_field(function, "name")
        if name and not call.name:
            call.name = name
        if args := get_field(function, "arguments"):
            if isinstance(args, dict):  # a few servers send parsed arguments
                args = json.dumps(args)
            call.arguments.append(args)

    def done(self) -> list[ToolCallDone]:
        out = []
        for index in sorted(self.calls):
            call = self.calls[index]
            if not call.name:
                continue
            call_id = call.id or f"call_{uuid.uuid4().hex[:24]}"
            # A call of a tool without parameters often comes with no argument text at all.
            arguments = "".join(call.arguments) or "{}"
            out.append(ToolCallDone(call_id=call_id, name=call.name, arguments=arguments))
        return out


def _usage(raw: Any) -> Usage:
    return Usage(
        input_tokens=get_field(raw, "prompt_tokens") or 0,
        output_tokens=get_field(raw, "completion_tokens") or 0,
        cached_input_tokens=get_field(get_field(raw, "prompt_tokens_details"), "cached_tokens") or 0,
        reasoning_tokens=get_field(get_field(raw, "completion_tokens_details"), "reasoning_tokens") or 0,
    )


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

    async def _once(self, params: dict[str, Any]) -> AsyncIterator[ModelEvent]:
        stream = await self._create(params)
        calls = _ToolCalls()
        texts: list[str] = []
        reasoning: list[str] = []
        usage: Usage | None = None
        reasoning_done = False
        try:
            async for chunk in stream:
                if (raw_usage := get_field(chunk, "usage")) is not None:
                    usage = _usage(raw_usage)
                for choice in get_field(chunk, "choices") or []:
                    delta = get_field(choice, "delta")
                    if delta is None:
                        continue
                    thought = get_field(delta, "reasoning_content") or get_field(delta, "reasoning")
                    if isinstance(thought, str) and thought:
                        reasoning.append(thought)
                        yield ReasoningSummaryDelta(delta=thought)
                    content = get_field(delta, "content")
                    tool_calls = get_field(delta, "tool_calls") or []
                    if reasoning and not reasoning_done and (content or tool_calls):
                        reasoning_done = True
                        yield ReasoningDone(summary="".join(reasoning))
                    if isinstance(content, str) and content:
                        texts.append(content)
                        yield TextDelta(delta=content)
                    for raw_call in tool_calls:
                        calls.add(raw_call)
        finally:
            await stream.close()
        if reasoning and not reasoning_done:
            yield ReasoningDone(summary="".join(reasoning))
        for done in calls.done():
            yield done
        if usage is not None:
            yield usage
        yield Completed(text="".join(texts))
