"""Token usage end to end: the real ``openai`` client streams from the local OpenAI-compatible
server, which reports usage only when asked (``stream_options.include_usage``); each request's
counts become a ``token_count`` event, the turn's sum is on its closing rollout line, the thread's
total survives resume, and the user's day adds up in the ledger."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.config import Config, ModelProviderConfig
from nbagent.core.usage import day_usage
from nbagent.examples.openai_compatible_server import ScriptedChatServer
from nbagent.protocol import TokenCount, TokenUsage

ADD = {"name": "add", "arguments": {"a": 2, "b": 3}}


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_MODEL_KEY", "")


def local_config(server: ScriptedChatServer, home: Path) -> Config:
    os.environ["LOCAL_MODEL_KEY"] = server.token  # read again when a resumed thread adopts its provider
    config = Config(
        model="scripted-local-model", model_provider="local", approval_policy="full-auto", home=str(home),
        model_providers={"local": ModelProviderConfig(base_url=server.base_url, wire_api="chat", env_key="LOCAL_MODEL_KEY")},
    )
    config.api_key = server.token
    return config


async def test_usage_is_counted_per_request_recorded_per_turn_and_summed_over_resume(home: Path) -> None:
    replies = [{"text": "Adding.", "tool_calls": [ADD]}, {"text": "It is 5."}, {"text": "Still 5."}]
    with ScriptedChatServer(replies) as server:
        counts: list[TokenCount] = []
        async with Session(config=local_config(server, home)) as session:
            session.register_tool(lambda a, b: a + b, name="add")
            session.subscribe(lambda e: isinstance(e.msg, TokenCount) and counts.append(e.msg))
            first = await session.run("add 2 and 3")
            assert first.text == "It is 5.", first
        assert all(body["stream_options"] == {"include_usage": True} for body in server.requests)
        assert len(counts) == 2
        lasts = [c.info.last_token_usage for c in counts if c.info]
        assert all(u.input_tokens > 0 and u.output_tokens > 0 for u in lasts)
        # the second request starts with the first: the server's prompt cache served part of it
        assert lasts[1].cached_input_tokens > 0 and lasts[1].input_tokens > lasts[0].input_tokens
        turn = lasts[0] + lasts[1]
        assert counts[-1].info and counts[-1].info.total_token_usage == turn

        rollout = home / "threads" / f"{first.thread_id}.jsonl"
        ends = [json.loads(line) for line in rollout.read_text().splitlines()]
        (end,) = [line for line in ends if line["type"] == "turn" and line["status"] == "completed"]
        assert TokenUsage.model_validate(end["usage"]) == turn
        assert day_usage(home) == turn

        counts.clear()
        async with Session(config=local_config(server, home), thread=first.thread_id) as session:
            assert session.snapshot().thread_usage == turn
            session.subscribe(lambda e: isinstance(e.msg, TokenCount) and counts.append(e.msg))
            again = await session.run("and again?")
            assert again.text == "Still 5.", again
            third = counts[-1].info
            assert third is not None and third.total_token_usage == turn + third.last_token_usage
            assert session.snapshot().thread_usage == third.total_token_usage
        assert day_usage(home) == third.total_token_usage
    assert server.token not in rollout.read_text()


async def test_a_server_that_reports_no_usage_counts_nothing_and_shows_nothing(home: Path) -> None:
    with ScriptedChatServer([{"text": "hi"}]) as server:
        server.replies[0]["usage"] = {}
        counts: list[TokenCount] = []
        async with Session(config=local_config(server, home)) as session:
            session.subscribe(lambda e: isinstance(e.msg, TokenCount) and counts.append(e.msg))
            result = await session.run("hello")
    assert result.text == "hi"
    assert [c.info.total_token_usage.total_tokens for c in counts if c.info] == [0]
    rollout = home / "threads" / f"{result.thread_id}.jsonl"
    assert all(json.loads(line).get("usage") is None for line in rollout.read_text().splitlines())
