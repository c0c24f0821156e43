"""OpenAI Responses API client (streaming), on the real ``openai.AsyncOpenAI`` client.

History is sent in full on every request (``store=False``), so the thread in nbagent's
rollout is the only state; nothing depends on the server remembering earlier responses.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator
from typing import Any

from nbagent.config import OPENAI_BASE_URL
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
from nbagent.protocol import (
    AssistantMessage,
    FunctionCall,
    FunctionCallOutput,
    ImageBlock,
    Item,
    ReasoningItem,
    ToolSpec,
    UndoItem,
    UserMessage,
)

_REASONING_MODEL = re.compile(r"^(o\d|gpt-5|codex)", re.IGNORECASE)


def is_reasoning_model(model: str) -> bool:
    """Reasoning models get summaries and encrypted reasoning round-tripped; others reject those keys."""
    return bool(_REASONING_MODEL.match(model.rsplit("/", 1)[-1]))


def to_input_items(items: list[Item]) -> list[dict[str, Any]]:
    """Project history onto Responses input items. Approval/elicitation records stay local."""
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, UserMessage | UndoItem):  # an undo is said to the model as the user
            out.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": item.text}]})
        elif isinstance(item, AssistantMessage):
            if item.text:
                out.append(
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": item.text}]}
                )
        elif isinstance(item, ReasoningItem):
            # Without the encrypted content a stateless request cannot refer to a reasoning item.
            if item.encrypted_content:
                out.append(
                    {
                        "type": "reasoning",
                        "summary": [{"type": "summary_text", "text": item.summary}] if item.summary else [],
                        "encrypted_content": item.encrypted_content,
                    }
                )
        elif isinstance(item, FunctionCall):
            out.append(
                {"type": "function_call", "call_id": item.call_id, "name": item.name, "arguments": item.arguments}
            )
        elif isinstance(item, FunctionCallOutput):
            out.append({"type": "function_call_output", "call_id": item.call_id, "output": _output(item)})
    return out


def _output(item: FunctionCallOutput) -> str | list[dict[str, Any]]:
    images = [block for block in item.content if isinstance(block, ImageBlock)]
    if not images:
        return item.output
    parts: list[dict[str, Any]] = [{"type": "input_text", "text": item.output}] if item.output else []
    parts += [{"type": "input_image", "image_url": f"data:{b.mime_type};base64,{b.data}"} for b in images]
    return parts


def to_tools(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
            "strict": tool.strict,
        }
        for tool in tools
    ]


def _usage(raw: Any) -> Usage | None:
    if raw is None:
        return None
    at = "response.completed: usage."
    inputs = typed(raw, "input_tokens_details", OBJECT, at)
    outputs = typed(raw, "output_tokens_details", OBJECT, at)
    return Usage(
        input_tokens=typed(raw, "input_tokens", INTEGER, at) or 0,
        cached_input_tokens=typed(inputs, "cached_tokens", INTEGER, f"{at}input_tokens_details.") or 0,
        output_tokens=typed(raw, "output_tokens", INTEGER, at) or 0,
        reasoning_output_tokens=typed(outputs, "reasoning_tokens", INTEGER, f"{at}output_tokens_details.") or 0,
        total_tokens=typed(raw, "total_tokens", INTEGER, at),
    )


def _message_text(item: Any, at: str) -> str:
    parts = [p for p in objects(item, "content", at) if get_field(p, "type") == "output_text"]
    return "".join(typed(p, "text", STRING, f"{at}content.") or "" for p in parts)


def _said(obj: Any, key: str) -> str | None:
    """A server's own words about a failure, whatever type it gave them in."""
    value = get_field(obj, key)
    return None if value is None else str(value)


class _Parser:
    """Turns Responses stream events into model events; state for one response only."""

    def __init__(self) -> None:
        self.streamed: set[str] = set()
        """Message items whose text came as deltas (their ``done`` must not repeat it)."""
        self.texts: list[str] = []
        self.reasoning: dict[str, list[str]] = {}
        self.completed = False

    def feed(self, event: Any) -> list[ModelEvent]:
        kind = typed(event, "type", STRING, "event ")
        at = f"{kind}: "
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            delta = typed(event, "delta", STRING, at) or ""
            self.streamed.add(typed(event, "item_id", STRING, at) or "")
            self.texts.append(delta)
            return [TextDelta(delta=delta)]
        if kind == "response.reasoning_summary_text.delta":
            delta = typed(event, "delta", STRING, at) or ""
            self.reasoning.setdefault(typed(event, "item_id", STRING, at) or "", []).append(delta)
            return [ReasoningSummaryDelta(delta=delta)]
        if kind == "response.output_item.done":
            return self._item_done(typed(event, "item", OBJECT, at), f"{at}item.")
        if kind == "response.completed":
            self.completed = True
            usage = _usage(typed(typed(event, "response", OBJECT, at), "usage", OBJECT, f"{at}response."))
            return [*([usage] if usage else []), Completed(text="".join(self.texts))]
        response = get_field(event, "response")
        if kind == "response.incomplete":
            reason = _said(get_field(response, "incomplete_details"), "reason") or "unknown reason"
            raise StreamFailure.stopped_early(reason)
        if kind == "response.failed":
            error = get_field(response, "error")
            message = _said(error, "message") or "the response failed"
            raise StreamFailure(message, code=_said(error, "code") or "server_error")
        if kind == "error":
            message = _said(event, "message") or "stream error"
            raise StreamFailure(message, code=_said(event, "code") or "server_error")
        return []

    def _item_done(self, item: Any, at: str) -> list[ModelEvent]:
        kind = typed(item, "type", STRING, at)
        item_id = typed(item, "id", STRING, at) or ""
        if kind == "function_call":
            call_id = typed(item, "call_id", STRING, at) or item_id
            name = typed(item, "name", STRING, at) or ""
            return [ToolCallDone(call_id=call_id, name=name, arguments=arguments(item, at) or "")]
        if kind == "message" and item_id not in self.streamed:
            # A server that sends whole items without deltas still shows its text.
            text = _message_text(item, at)
            self.texts.append(text)
            return [TextDelta(delta=text)] if text else []
        if kind == "reasoning":
            parts = [typed(part, "text", STRING, f"{at}summary.") or "" for part in objects(item, "summary", at)]
            summary = "\n\n".join(p for p in parts if p) or "".join(self.reasoning.get(item_id, []))
            encrypted = typed(item, "encrypted_content", STRING, at)
            out: list[ModelEvent] = []
            if summary and item_id not in self.reasoning:
                out.append(ReasoningSummaryDelta(delta=summary))
            if summary or encrypted:
                out.append(ReasoningDone(summary=summary, encrypted_content=encrypted))
            return out
        return []


class ResponsesModel(HttpModel):
    """``wire_api = "responses"``: OpenAI itself and servers that implement ``POST /responses``."""

    wire_api = "responses"
    path = "/responses"

    def __init__(self, model: str, endpoint: Endpoint | None = None, *, retry: RetryPolicy | None = None) -> None:
        super().__init__(model, endpoint, retry=retry)
        base_url = self.endpoint.base_url
        where = "OpenAI Responses" if base_url == OPENAI_BASE_URL else f"Responses API at {base_url}"
        self.label = f"{model} ({where})"

    def build_params(self, request: ModelRequest) -> dict[str, Any]:
        """The request body (minus ``stream``); public so tests and debugging can see it."""
        params: dict[str, Any] = {
            "model": request.model or self.model,
            "input": to_input_items(request.items),
            "store": False,
        }
        if request.instructions:
            params["instructions"] = request.instructions
        if request.tools:
            params["tools"] = to_tools(request.tools)
            params["tool_choice"] = "auto"
            params["parallel_tool_calls"] = request.parallel_tool_calls
        if is_reasoning_model(params["model"]):
            params["reasoning"] = {"summary": "auto"}
            params["include"] = ["reasoning.encrypted_content"]
        return params

    async def _once(self, params: dict[str, Any]) -> AsyncGenerator[ModelEvent, None]:
        stream = await self._client.responses.create(**params, stream=True)
        parser = _Parser()
        try:
            async for event in stream:
                for out in parser.feed(event):
                    yield out
                if parser.completed:
                    return
            raise not_a_stream(stream) or StreamFailure("the stream ended before response.completed")
        finally:
            await stream.close()
