"""Whole turns through the real ``openai`` client over HTTP, against the local test server,
for both wire APIs: what a user of Ollama/vLLM or OpenAI would see."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.config import Config, ModelProviderConfig
from nbagent.protocol import EventMsg, FunctionCallOutput

SECRET = "sk-test-secret-key-0123456789"


def config_for(server, wire_api: str, home: Path) -> Config:
    config = Config(
        model="test-model",
        model_provider="local",
        model_providers={"local": ModelProviderConfig(base_url=server.base_url, wire_api=wire_api, request_max_retries=3)},
        approval_policy="full-auto",
        home=str(home),
    )
    config.api_key = SECRET
    return config


def sent_outputs(body: dict, wire_api: str) -> dict[str, str]:
    """The tool outputs a request carried back to the model, by call id."""
    if wire_api == "responses":
        return {i["call_id"]: i["output"] for i in body["input"] if i.get("type") == "function_call_output"}
    return {m["tool_call_id"]: m["content"] for m in body["messages"] if m.get("role") == "tool"}


@pytest.fixture(params=["responses", "chat"])
def wire_api(request: pytest.FixtureRequest) -> str:
    return request.param


async def test_three_step_tool_loop_over_http(openai_server, home: Path, wire_api: str) -> None:
    step = lambda a, b: {"tool_calls": [{"name": "add", "arguments": {"a": a, "b": b}}]}  # noqa: E731
    openai_server.script([step(1, 2), step(3, 4), step(5, 6), {"text": "All added.", "usage": {"input_tokens": 9, "output_tokens": 3}}])
    usage: list[EventMsg] = []
    async with Session(config=config_for(openai_server, wire_api, home)) as session:
        session.register_tool(lambda a, b: a + b, name="add")
        session.subscribe(lambda e: e.msg.type == "token_count" and usage.append(e.msg))
        result = await session.run("add three times")
    assert result.text == "All added."
    assert len(openai_server.requests) == 4
    assert list(sent_outputs(openai_server.requests[3], wire_api).values()) == ["3", "7", "11"]
    assert len(usage) == 4  # one token_count per request, the thread's total adding up
    assert usage[-1].info.total_token_usage.model_dump() == {
        "input_tokens": 42, "cached_input_tokens": 0, "output_tokens": 24, "reasoning_output_tokens": 0, "total_tokens": 66}
    assert openai_server.requests[0]["tools"][0]["name" if wire_api == "responses" else "function"]
    rollout = (home / "threads" / f"{result.thread_id}.jsonl").read_text()
    assert SECRET not in rollout


async def test_two_parallel_calls_both_get_outputs(openai_server, home: Path, wire_api: str) -> None:
    openai_server.script(
        [
            {"tool_calls": [{"name": "get", "arguments": {"key": "a"}}, {"name": "get", "arguments": {"key": "b"}}]},
            {"text": "got both"},
        ]
    )
    async with Session(config=config_for(openai_server, wire_api, home)) as session:
        session.register_tool(lambda key: key.upper(), name="get", read_only=True)
        result = await session.run("get a and b")
    assert result.text == "got both"
    assert sorted(sent_outputs(openai_server.requests[1], wire_api).values()) == ["A", "B"]


async def test_malformed_arguments_go_back_to_the_model_as_an_error(openai_server, home: Path, wire_api: str) -> None:
    openai_server.script([{"tool_calls": [{"name": "add", "arguments": '{"a": 1, "b": '}]}, {"text": "sorry"}])
    async with Session(config=config_for(openai_server, wire_api, home)) as session:
        session.register_tool(lambda a, b: a + b, name="add")
        result = await session.run("add")
    (output,) = sent_outputs(openai_server.requests[1], wire_api).values()
    assert "not valid JSON" in output and result.text == "sorry"


async def test_500_and_429_are_retried_and_the_turn_completes(openai_server, home: Path, wire_api: str) -> None:
    openai_server.script([{"status": 500}, {"status": 429, "retry_after": 0}, {"text": "third time lucky"}])
    async with Session(config=config_for(openai_server, wire_api, home)) as session:
        result = await session.run("hello")
    assert result.text == "third time lucky" and len(openai_server.requests) == 3


async def test_an_error_mid_stream_is_retried_or_reported_never_duplicated(openai_server, home: Path, wire_api: str) -> None:
    openai_server.script([{"error_mid_stream": 500, "text": "partial answer here"}, {"text": "clean answer"}])
    async with Session(config=config_for(openai_server, wire_api, home)) as session:
        result = await session.run("hello")
    if result.ok:
        assert result.text == "clean answer"
    else:
        assert result.error_code in ("server", "connection") and "clean" not in result.text


async def test_an_auth_error_is_a_clear_error_and_the_session_survives(openai_server, home: Path, wire_api: str) -> None:
    openai_server.script([{"status": 401}, {"text": "after fixing the key"}])
    errors: list[EventMsg] = []
    async with Session(config=config_for(openai_server, wire_api, home)) as session:
        session.subscribe(lambda e: e.msg.type == "turn_failed" and errors.append(e.msg))
        failed = await session.run("hello")
        later = await session.run("again")
    assert failed.status == "failed" and failed.error_code == "auth"
    assert errors[0].code == "auth" and SECRET not in errors[0].message
    assert later.text == "after fixing the key"
    history_outputs = [i for i in failed.items if isinstance(i, FunctionCallOutput)]
    assert history_outputs == []
    assert json.dumps([e.model_dump() for e in errors]).count(SECRET) == 0


async def test_a_call_whose_line_was_lost_leaves_no_orphan_output_in_what_the_model_is_sent(
    openai_server, home: Path, wire_api: str,
) -> None:
    """A damaged ``function_call`` line costs that line (design §8): its output, which would make
    every later request one the API refuses, is not sent, and the user is told."""
    openai_server.script([{"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}, {"text": "3"}, {"text": "again"}])
    async with Session(config=config_for(openai_server, wire_api, home)) as session:
        session.register_tool(lambda a, b: a + b, name="add")
        first = await session.run("add")
    rollout = home / "threads" / f"{first.thread_id}.jsonl"
    lines = rollout.read_text().splitlines(keepends=True)
    (cut,) = [n for n, line in enumerate(lines) if '"type":"function_call"' in line]
    lines[cut] = lines[cut][:40] + "\n"
    rollout.write_text("".join(lines))
    warnings: list[str] = []
    session = Session(config=config_for(openai_server, wire_api, home), thread=first.thread_id)
    session.subscribe(lambda e: e.msg.type == "warning" and warnings.append(e.msg.message))  # type: ignore[union-attr]
    async with session:
        again = await session.run("and now")
    assert again.text == "again"
    assert sent_outputs(openai_server.requests[2], wire_api) == {}
    assert any("follows no call" in w and "call_fake_0" in w for w in warnings), warnings
    assert rollout.read_text().count('"type":"function_call_output"') == 1  # the record keeps it
