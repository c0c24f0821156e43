"""The Responses stream parser on events a lenient server might send (plain dicts, no deltas)."""

from __future__ import annotations

import pytest

from nbagent.models.base import ModelRequest, ReasoningDone, ReasoningSummaryDelta, TextDelta, ToolCallDone
from nbagent.models.responses import ResponsesModel, _Parser, is_reasoning_model, to_input_items
from nbagent.models.retry import StreamFailure
from nbagent.protocol import FunctionCallOutput, ImageBlock, ReasoningItem, UserMessage


def test_whole_items_without_deltas() -> None:
    parser = _Parser()
    events = []
    for raw in [
        {"type": "response.output_item.done", "item": {"id": "rs", "type": "reasoning",
                                                       "summary": [{"type": "summary_text", "text": "plan"}]}},
        {"type": "response.output_item.done", "item": {"id": "m", "type": "message",
                                                       "content": [{"type": "output_text", "text": "hello"}]}},
        {"type": "response.output_item.done", "item": {"id": "f", "type": "function_call", "call_id": "c9",
                                                       "name": "t", "arguments": "{}"}},
        {"type": "response.completed", "response": {"usage": None}},
    ]:
        events += parser.feed(raw)
    assert [type(e) for e in events] == [ReasoningSummaryDelta, ReasoningDone, TextDelta, ToolCallDone,
                                         type(events[-1])]
    assert events[-1].type == "completed" and events[-1].text == "hello"
    assert events[3] == ToolCallDone(call_id="c9", name="t", arguments="{}")


def test_done_item_does_not_repeat_streamed_text() -> None:
    parser = _Parser()
    events = parser.feed({"type": "response.output_text.delta", "item_id": "m", "delta": "hi"})
    events += parser.feed({"type": "response.output_item.done",
                           "item": {"id": "m", "type": "message", "content": [{"type": "output_text", "text": "hi"}]}})
    assert [e.delta for e in events if isinstance(e, TextDelta)] == ["hi"]


@pytest.mark.parametrize(
    ("event", "code"),
    [
        ({"type": "response.failed", "response": {"error": {"code": "context_length_exceeded", "message": "long"}}},
         "context_length_exceeded"),
        ({"type": "response.incomplete", "response": {"incomplete_details": {"reason": "max_output_tokens"}}},
         "incomplete"),
        ({"type": "error", "code": "rate_limit_exceeded", "message": "slow"}, "rate_limit_exceeded"),
    ],
)
def test_failures_in_the_stream(event: dict, code: str) -> None:
    with pytest.raises(StreamFailure) as info:
        _Parser().feed(event)
    assert info.value.code == code


def test_reasoning_models_round_trip_encrypted_reasoning() -> None:
    assert is_reasoning_model("gpt-5.1") and is_reasoning_model("o3-mini") and not is_reasoning_model("gpt-4.1")
    params = ResponsesModel("gpt-5.1").build_params(ModelRequest(model="gpt-5.1"))
    assert params["include"] == ["reasoning.encrypted_content"] and params["reasoning"] == {"summary": "auto"}
    assert "include" not in ResponsesModel("gpt-4.1").build_params(ModelRequest(model="gpt-4.1"))


def test_reasoning_without_encrypted_content_and_images() -> None:
    items = to_input_items([
        UserMessage(text="look"),
        ReasoningItem(summary="only a summary"),
        FunctionCallOutput(call_id="c", output="a chart", content=[ImageBlock(data="AAAA")]),
    ])
    assert [i["type"] for i in items] == ["message", "function_call_output"]
    assert items[1]["output"] == [{"type": "input_text", "text": "a chart"},
                                  {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]
