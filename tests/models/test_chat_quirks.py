"""Chat Completions servers differ in small ways; the client tolerates each of them."""

from __future__ import annotations

import json

from nbagent.models.base import ReasoningDone, ToolCallDone, Usage
from nbagent.models.chat import ChatModel, _ToolCalls
from nbagent.models.endpoint import Endpoint
from tests.fakes.openai_server import FakeOpenAIServer
from tests.models.helpers import MODEL, calls_of, collect, text_of


def _client(server: FakeOpenAIServer) -> ChatModel:
    return ChatModel(MODEL, Endpoint(base_url=server.base_url))


async def test_missing_ids_get_one_synthesized_id_per_call(openai_server: FakeOpenAIServer) -> None:
    openai_server.script([{"omit_ids": True, "tool_calls": [{"name": "a", "arguments": {"x": "long enough to split"}},
                                                            {"name": "b", "arguments": {}}]}])
    client = _client(openai_server)
    events = await collect(client)
    await client.aclose()
    calls = calls_of(events)
    assert [c.name for c in calls] == ["a", "b"]
    assert all(c.call_id.startswith("call_") for c in calls) and calls[0].call_id != calls[1].call_id


async def test_whole_call_in_one_chunk(openai_server: FakeOpenAIServer) -> None:
    openai_server.script([{"single_chunk": True, "tool_calls": [{"name": "a", "arguments": {"k": 1}},
                                                                {"name": "b", "arguments": {"k": 2}}]}])
    client = _client(openai_server)
    calls = calls_of(await collect(client))
    await client.aclose()
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("a", {"k": 1}), ("b", {"k": 2})]


async def test_no_usage_is_fine(openai_server: FakeOpenAIServer) -> None:
    openai_server.script([{"no_usage": True, "text": "hi there"}])
    client = _client(openai_server)
    events = await collect(client)
    await client.aclose()
    assert text_of(events) == "hi there"
    assert not [e for e in events if isinstance(e, Usage)]


async def test_server_rejecting_stream_options(openai_server: FakeOpenAIServer) -> None:
    openai_server.reject_stream_options = True
    openai_server.script([{"text": "one"}, {"text": "two"}])
    client = _client(openai_server)
    assert text_of(await collect(client)) == "one"
    assert text_of(await collect(client)) == "two"
    await client.aclose()
    assert ["stream_options" in body for body in openai_server.requests] == [True, False, False]
    assert client.send_stream_options is False


async def test_reasoning_content_before_text(openai_server: FakeOpenAIServer) -> None:
    openai_server.script([{"reasoning": "hmm let me see", "text": "answer"}])
    client = _client(openai_server)
    events = await collect(client)
    await client.aclose()
    [done] = [e for e in events if isinstance(e, ReasoningDone)]
    assert done.summary == "hmm let me see"
    assert text_of(events[events.index(done):]) == "answer"


def _feed(chunks: list[dict]) -> list[ToolCallDone]:
    acc = _ToolCalls()
    for chunk in chunks:
        acc.add(chunk)
    return acc.done()


def test_chunks_without_index_continue_the_last_call() -> None:
    calls = _feed([
        {"id": "c1", "function": {"name": "a", "arguments": '{"x":'}},
        {"function": {"arguments": " 1}"}},
        {"id": "c2", "function": {"name": "b", "arguments": "{}"}},
    ])
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [("c1", "a", '{"x": 1}'), ("c2", "b", "{}")]


def test_index_reused_with_a_new_id_starts_a_new_call() -> None:
    calls = _feed([
        {"index": 0, "id": "c1", "function": {"name": "a", "arguments": "{}"}},
        {"index": 0, "id": "c2", "function": {"name": "b", "arguments": '{"y": 2}'}},
    ])
    assert [(c.call_id, c.name) for c in calls] == [("c1", "a"), ("c2", "b")]


def test_name_after_arguments_and_empty_arguments() -> None:
    calls = _feed([
        {"index": 0, "function": {"arguments": ""}},
        {"index": 0, "id": "c1", "function": {"name": "noargs"}},
    ])
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [("c1", "noargs", "{}")]


def test_parsed_dict_arguments_are_serialised() -> None:
    [call] = _feed([{"index": 0, "id": "c1", "function": {"name": "a", "arguments": {"z": [1, 2]}}}])
    assert json.loads(call.arguments) == {"z": [1, 2]}


def test_text_recorded_after_calls_joins_their_message() -> None:
    from nbagent.models.chat import to_messages
    from nbagent.protocol import AssistantMessage, FunctionCall, FunctionCallOutput, UserMessage

    messages = to_messages(None, [
        UserMessage(text="go"),
        FunctionCall(call_id="c1", name="a", arguments="{}"),
        AssistantMessage(text="Calling a."),
        FunctionCallOutput(call_id="c1", output="done"),
    ])
    assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
    assert messages[1]["content"] == "Calling a." and messages[1]["tool_calls"][0]["id"] == "c1"
