"""Usage as each model reports it, in Codex's names: the replay model and the local test server
count what a real model would, and a server's own totals and details are read, not guessed."""

from __future__ import annotations

import json
from pathlib import Path

from nbagent.examples.openai_compatible_server import ScriptedChatServer, chunks
from nbagent.models.base import ModelRequest, Usage
from nbagent.models.chat import ChatModel
from nbagent.models.endpoint import Endpoint
from nbagent.models.replay import ReplayModel
from nbagent.protocol import AssistantMessage, TokenUsage, UserMessage
from tests.models.helpers import collect

LONG = "Summarise the experiment log in three lines. " * 40


def usage_of(events: list) -> TokenUsage:
    (usage,) = [e for e in events if isinstance(e, Usage)]
    return usage.tokens()


async def test_the_replay_model_counts_what_it_was_sent_and_said(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"responses": [{"text": "Three lines.", "reasoning": "Short."}, {"text": "Done."},
                                                {"text": "x", "usage": {"input_tokens": 7, "output_tokens": 1}}]}))
    model = ReplayModel(script)
    first = usage_of(await collect(model, ModelRequest(model="m", instructions="Be brief.", items=[UserMessage(text=LONG)])))
    assert first.input_tokens > len(LONG) // 5 and first.cached_input_tokens == 0
    assert first.reasoning_output_tokens > 0 and first.output_tokens > first.reasoning_output_tokens
    assert first.total_tokens == first.input_tokens + first.output_tokens
    longer = [UserMessage(text=LONG), AssistantMessage(text="Three lines."), UserMessage(text="thanks")]
    second = usage_of(await collect(model, ModelRequest(model="m", instructions="Be brief.", items=longer)))
    assert second.input_tokens > first.input_tokens
    assert 0 < second.cached_input_tokens <= first.input_tokens  # the first request's prompt, from the cache
    scripted = usage_of(await collect(model, ModelRequest(model="m", items=longer)))
    assert (scripted.input_tokens, scripted.output_tokens, scripted.total_tokens) == (7, 1, 8)


async def test_the_local_server_reports_usage_through_the_real_client_only_when_asked() -> None:
    usage = {"input_tokens": 900, "cached_input_tokens": 640, "output_tokens": 40, "reasoning_output_tokens": 12,
             "total_tokens": 940}
    with ScriptedChatServer([{"text": "ok", "usage": usage}]) as server:
        model = ChatModel("scripted-local-model", Endpoint(base_url=server.base_url, api_key=server.token))
        try:
            got = usage_of(await collect(model, ModelRequest(model="scripted-local-model", items=[UserMessage(text="hi")])))
        finally:
            await model.aclose()
    assert got == TokenUsage(**usage)
    assert not any("usage" in part for part in chunks({"text": "ok"}, "m", include_usage=False))


async def test_a_server_that_reports_negative_usage_refunds_nothing() -> None:
    with ScriptedChatServer([{"text": "ok", "usage": {"input_tokens": -5000, "output_tokens": 3}}]) as server:
        model = ChatModel("scripted-local-model", Endpoint(base_url=server.base_url, api_key=server.token))
        try:
            got = usage_of(await collect(model, ModelRequest(model="scripted-local-model", items=[UserMessage(text="hi")])))
        finally:
            await model.aclose()
    assert (got.input_tokens, got.output_tokens) == (0, 3) and got.total_tokens >= 0
