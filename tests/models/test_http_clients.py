"""Both HTTP clients, with the real openai SDK over real sockets against the fake server."""

from __future__ import annotations

import json
import socket
import time

import pytest

from nbagent.models.base import (
    Completed,
    ModelError,
    ModelRequest,
    ReasoningDone,
    ReasoningSummaryDelta,
    TextDelta,
    Usage,
)
from nbagent.protocol import (
    ApprovalRecord,
    AssistantMessage,
    ElicitationRecord,
    FunctionCall,
    FunctionCallOutput,
    ReasoningItem,
    ToolSpec,
    UserMessage,
)
from tests.fakes.openai_server import FakeOpenAIServer
from tests.models.helpers import API_KEY, MODEL, MakeClient, ask, calls_of, collect, text_of


async def test_text_streams_in_order(openai_server: FakeOpenAIServer, make_client: MakeClient) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    openai_server.script([{"text": text, "usage": {"input_tokens": 5, "output_tokens": 9}}])
    events = await collect(make_client())
    deltas = [e.delta for e in events if isinstance(e, TextDelta)]
    assert len(deltas) == 9
    assert "".join(deltas) == text
    assert isinstance(events[-1], Completed) and events[-1].text == text
    usage = [e for e in events if isinstance(e, Usage)]
    assert [(u.input_tokens, u.output_tokens) for u in usage] == [(5, 9)]


async def test_tool_call_with_streamed_arguments(openai_server: FakeOpenAIServer, make_client: MakeClient) -> None:
    arguments = {"path": "notes/very/long/file/name.txt", "limit": 200}
    openai_server.script([{"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": arguments}]}])
    events = await collect(make_client())
    [call] = calls_of(events)
    assert call.name == "read_file" and json.loads(call.arguments) == arguments
    assert text_of(events) == "Reading."


async def test_two_parallel_tool_calls(openai_server: FakeOpenAIServer, make_client: MakeClient) -> None:
    openai_server.script(
        [{"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}, {"name": "mul", "arguments": {"a": 3}}]}]
    )
    events = await collect(make_client())
    calls = calls_of(events)
    assert [c.name for c in calls] == ["add", "mul"]
    assert len({c.call_id for c in calls}) == 2
    assert [json.loads(c.arguments) for c in calls] == [{"a": 1, "b": 2}, {"a": 3}]
    assert isinstance(events[-1], Completed) and events[-1].text == ""


async def test_malformed_arguments_pass_through_verbatim(openai_server: FakeOpenAIServer, make_client: MakeClient) -> None:
    raw = '{"path": "a.txt", "limit": 10'
    openai_server.script([{"tool_calls": [{"name": "read_file", "arguments": raw}]}])
    [call] = calls_of(await collect(make_client()))
    assert call.arguments == raw


async def test_reasoning_summary(openai_server: FakeOpenAIServer, make_client: MakeClient) -> None:
    openai_server.script([{"reasoning": "First think, then answer.", "text": "42"}])
    events = await collect(make_client())
    assert "".join(e.delta for e in events if isinstance(e, ReasoningSummaryDelta)) == "First think, then answer."
    [done] = [e for e in events if isinstance(e, ReasoningDone)]
    assert done.summary == "First think, then answer."
    assert events.index(done) < next(i for i, e in enumerate(events) if isinstance(e, TextDelta))


@pytest.mark.parametrize("failure", [{"status": 500}, {"status": 503}, {"status": 429, "retry_after": 0}])
async def test_retry_then_success(openai_server: FakeOpenAIServer, make_client: MakeClient, failure: dict) -> None:
    openai_server.script([failure, {"text": "ok now"}])
    events = await collect(make_client())
    assert text_of(events) == "ok now"
    assert len(openai_server.requests) == 2
    assert openai_server.requests[0] == openai_server.requests[1]


async def test_failure_before_first_delta_is_retried(openai_server: FakeOpenAIServer, make_client: MakeClient) -> None:
    """A 500 reported inside the stream, or a drop, before any delta: nothing to repeat, so retry."""
    openai_server.script(
        [
            {"error_mid_stream": 500, "fail_after": 0, "text": "lost"},
            {"fail_mid_stream": True, "fail_after": 0, "text": "lost too"},
            {"text": "third time lucky"},
        ]
    )
    events = await collect(make_client())
    assert text_of(events) == "third time lucky"
    assert len(openai_server.requests) == 3


@pytest.mark.parametrize(
    ("failure", "code"),
    [({"fail_mid_stream": True}, "connection"), ({"error_mid_stream": 500}, "server"), ({"error_mid_stream": 429}, "rate_limit")],
)
async def test_failure_after_deltas_raises_without_duplicating(
    openai_server: FakeOpenAIServer, make_client: MakeClient, failure: dict, code: str
) -> None:
    openai_server.script([{**failure, "text": "one two three four five", "fail_after": 2}, {"text": "never sent"}])
    seen: list = []
    with pytest.raises(ModelError) as info:
        await collect(make_client(), sink=seen)
    assert info.value.code == code
    assert text_of(seen) == "one two "
    assert len(openai_server.requests) == 1
    assert "not retried" in str(info.value) and openai_server.base_url in str(info.value)


async def test_persistent_500_becomes_server_error(openai_server: FakeOpenAIServer, make_client: MakeClient) -> None:
    openai_server.script([{"status": 500}] * 3)
    with pytest.raises(ModelError) as info:
        await collect(make_client(retries=2))
    assert info.value.code == "server" and info.value.status == 500
    assert len(openai_server.requests) == 3
    assert "after 3 attempts" in str(info.value) and MODEL in str(info.value)


async def test_persistent_429_becomes_rate_limit(openai_server: FakeOpenAIServer, make_client: MakeClient) -> None:
    openai_server.script([{"status": 429, "retry_after": 0}] * 2)
    with pytest.raises(ModelError) as info:
        await collect(make_client(retries=1))
    assert info.value.code == "rate_limit"
    assert len(openai_server.requests) == 2


async def test_long_retry_after_is_not_waited_for(openai_server: FakeOpenAIServer, make_client: MakeClient) -> None:
    openai_server.script([{"status": 429, "retry_after": 3600}, {"text": "too late"}])
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        await collect(make_client())
    assert time.monotonic() - started < 2
    assert info.value.code == "rate_limit" and "3600" in str(info.value)
    assert len(openai_server.requests) == 1


async def test_auth_error_never_shows_the_key(openai_server: FakeOpenAIServer, make_client: MakeClient) -> None:
    openai_server.script([{"status": 401}])
    with pytest.raises(ModelError) as info:
        await collect(make_client())
    message = str(info.value)
    assert info.value.code == "auth" and info.value.status == 401
    assert API_KEY not in message and API_KEY[-8:] not in message
    assert "OPENAI_API_KEY" in message and openai_server.base_url in message
    assert len(openai_server.requests) == 1, "auth errors are not retried"
    assert openai_server.headers[0]["authorization"] == f"Bearer {API_KEY}"


async def test_unknown_model(openai_server: FakeOpenAIServer, make_client: MakeClient) -> None:
    openai_server.script([{"status": 404, "code": "model_not_found"}])
    with pytest.raises(ModelError) as info:
        await collect(make_client())
    assert info.value.code == "unknown_model"
    assert MODEL in str(info.value) and openai_server.base_url in str(info.value)


async def test_unknown_model_from_message_only(openai_server: FakeOpenAIServer, make_client: MakeClient) -> None:
    """Ollama-style: a 404 with no code, only a message naming the model."""
    openai_server.script([{"status": 404, "code": None, "message": f"model '{MODEL}' not found, try pulling it first"}])
    with pytest.raises(ModelError) as info:
        await collect(make_client())
    assert info.value.code == "unknown_model"


async def test_context_too_long(openai_server: FakeOpenAIServer, make_client: MakeClient) -> None:
    openai_server.script([{"status": 400, "code": "context_length_exceeded"}])
    with pytest.raises(ModelError) as info:
        await collect(make_client())
    assert info.value.code == "context_length"
    assert MODEL in str(info.value) and "new thread" in str(info.value)
    assert len(openai_server.requests) == 1


async def test_wrong_path_is_bad_base_url(openai_server: FakeOpenAIServer, make_client: MakeClient) -> None:
    client = make_client(base_url=openai_server.base_url.removesuffix("/v1") + "/api")
    with pytest.raises(ModelError) as info:
        await collect(client)
    assert info.value.code == "bad_base_url" and "/api" in str(info.value)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_connection_refused_is_bad_base_url_quickly(make_client: MakeClient) -> None:
    base_url = f"http://127.0.0.1:{_free_port()}/v1"
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        await collect(make_client(retries=1, base_url=base_url))
    assert time.monotonic() - started < 3
    assert info.value.code == "bad_base_url"
    assert base_url in str(info.value) and MODEL in str(info.value) and API_KEY not in str(info.value)


def _history() -> list:
    return [
        UserMessage(text="list files"),
        ReasoningItem(summary="use ls", encrypted_content="opaque"),
        AssistantMessage(text="Looking."),
        FunctionCall(call_id="call_1", name="ls", arguments='{"dir": "."}'),
        ApprovalRecord(call_id="call_1", tool="ls", decision="approve", by="user"),
        FunctionCall(call_id="call_2", name="ls", arguments='{"dir": "src"}'),
        FunctionCallOutput(call_id="call_1", output="a.txt"),
        FunctionCallOutput(call_id="call_2", output="denied", is_error=True, status="denied"),
        ElicitationRecord(request_id="r1", server="s", action="decline", by="policy"),
    ]


TOOL = ToolSpec(name="ls", description="List a directory.", parameters={"type": "object", "properties": {"dir": {"type": "string"}}})


async def test_responses_request_body(openai_server: FakeOpenAIServer) -> None:
    from nbagent.models.endpoint import Endpoint
    from nbagent.models.responses import ResponsesModel

    openai_server.script([{"text": "done"}])
    client = ResponsesModel(MODEL, Endpoint(base_url=openai_server.base_url, api_key=API_KEY))
    request = ModelRequest(model=MODEL, instructions="Be brief.", items=_history(), tools=[TOOL], parallel_tool_calls=False)
    await collect(client, request)
    await client.aclose()
    [body] = openai_server.requests
    assert openai_server.paths == ["/v1/responses"]
    assert body["stream"] is True and body["store"] is False and body["instructions"] == "Be brief."
    assert body["parallel_tool_calls"] is False
    assert body["tools"] == [
        {"type": "function", "name": "ls", "description": "List a directory.", "parameters": TOOL.parameters, "strict": False}
    ]
    assert [i["type"] for i in body["input"]] == [
        "message", "reasoning", "message", "function_call", "function_call", "function_call_output", "function_call_output"
    ]
    assert body["input"][0]["content"] == [{"type": "input_text", "text": "list files"}]
    assert body["input"][1]["encrypted_content"] == "opaque"
    assert body["input"][2] == {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]}
    assert body["input"][3] == {"type": "function_call", "call_id": "call_1", "name": "ls", "arguments": '{"dir": "."}'}
    assert body["input"][5] == {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"}
    assert body["input"][6]["output"] == "denied"


async def test_chat_request_body(openai_server: FakeOpenAIServer) -> None:
    from nbagent.models.chat import ChatModel
    from nbagent.models.endpoint import Endpoint

    openai_server.script([{"text": "done"}])
    client = ChatModel(MODEL, Endpoint(base_url=openai_server.base_url, api_key=API_KEY))
    request = ModelRequest(model=MODEL, instructions="Be brief.", items=_history(), tools=[TOOL])
    await collect(client, request)
    await client.aclose()
    [body] = openai_server.requests
    assert openai_server.paths == ["/v1/chat/completions"]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert "parallel_tool_calls" not in body
    assert body["tools"] == [{"type": "function", "function": {"name": "ls", "description": "List a directory.", "parameters": TOOL.parameters}}]
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool"]
    assert messages[2]["content"] == "Looking."
    assert [c["id"] for c in messages[2]["tool_calls"]] == ["call_1", "call_2"]
    assert messages[2]["tool_calls"][1]["function"] == {"name": "ls", "arguments": '{"dir": "src"}'}
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"}


async def test_stopping_early_releases_the_stream(openai_server: FakeOpenAIServer, make_client: MakeClient) -> None:
    """An interrupt closes the generator: the HTTP stream is released and the client stays usable."""
    openai_server.script([{"text": "a b c d e f g h", "delay": 0.2}, {"text": "next"}])
    client = make_client()
    stream = client.stream(ask())
    started = time.monotonic()
    first = await anext(stream)
    await stream.aclose()  # type: ignore[attr-defined]
    assert isinstance(first, TextDelta) and time.monotonic() - started < 1.0
    assert text_of(await collect(client)) == "next"


async def test_idle_stream_times_out(openai_server: FakeOpenAIServer, wire: str) -> None:
    from nbagent.models.chat import ChatModel
    from nbagent.models.endpoint import Endpoint
    from nbagent.models.responses import ResponsesModel

    openai_server.script([{"text": "slow words", "delay": 1.0}])
    cls = ResponsesModel if wire == "responses" else ChatModel
    client = cls(MODEL, Endpoint(base_url=openai_server.base_url, idle_timeout=0.3))
    seen: list = []
    with pytest.raises(ModelError) as info:
        await collect(client, sink=seen)
    await client.aclose()
    assert info.value.code == "connection" and "did not answer in time" in str(info.value)
    assert text_of(seen) == "slow "
