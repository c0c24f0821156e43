"""Replies a server answers 200 with that are not a finished stream or break the wire API: each
fails its turn with one clear error naming the server (never quoting the key), or, where a
compatible server legitimately does so, is accepted; the session runs its next turn."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nbagent import Session
from nbagent.config import Config, ModelProviderConfig
from nbagent.core.session import RunResult
from tests.fakes.openai_server import FakeOpenAIServer

SECRET = "sk-test-secret-key-0123456789"
LATER = {"text": "a later turn"}
Edit = Callable[[dict[str, Any]], None]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty ``$NBAGENT_HOME`` and a cwd with no config, so no user file leaks in."""
    for name in ("NBAGENT_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path / "home"


def config_for(server: FakeOpenAIServer, wire_api: str, home: Path) -> Config:
    """No retries: the first answer is the one the turn sees."""
    provider = ModelProviderConfig(base_url=server.base_url, wire_api=wire_api, request_max_retries=0)
    config = Config(model="test-model", model_provider="local", model_providers={"local": provider},
                    approval_policy="full-auto", home=str(home))
    config.api_key = SECRET
    return config


def sent_outputs(body: dict[str, Any], wire_api: str) -> list[str]:
    """The tool outputs a request carried back to the model."""
    if wire_api == "responses":
        return [i["output"] for i in body["input"] if i.get("type") == "function_call_output"]
    return [m["content"] for m in body["messages"] if m.get("role") == "tool"]


async def two_turns(
    server: FakeOpenAIServer, wire_api: str, home: Path, step: dict[str, Any],
) -> tuple[RunResult, RunResult]:
    """A turn answered by ``step``, then one answered normally."""
    server.script([step, LATER])
    async with Session(config=config_for(server, wire_api, home)) as session:
        session.register_tool(lambda a, b: a + b, name="add")
        first = await session.run("hello")
        later = await session.run("again")
    return first, later


def assert_failed_clearly(server: FakeOpenAIServer, first: RunResult, later: RunResult, *words: str) -> None:
    assert first.status == "failed", (first.status, first.text, first.error)
    assert first.error_code not in (None, "internal"), first.error
    assert first.error is not None and server.base_url in first.error, first.error
    assert all(word in first.error for word in words), first.error
    assert SECRET not in first.error
    assert later.ok and later.text == "a later turn", later.error


@pytest.fixture(params=["responses", "chat"])
def wire_api(request: pytest.FixtureRequest) -> str:
    return request.param


# -- 1. a 200 that is not a finished stream -----------------------------------------------------


async def test_an_html_page_is_not_a_reply(openai_server: FakeOpenAIServer, home: Path, wire_api: str) -> None:
    step = {"body": "<html><body><h1>Sign in</h1></body></html>", "content_type": "text/html"}
    first, later = await two_turns(openai_server, wire_api, home, step)
    assert_failed_clearly(openai_server, first, later, "text/html", "not an event stream")


async def test_a_reply_that_was_not_streamed_is_not_taken_for_an_empty_one(
    openai_server: FakeOpenAIServer, home: Path, wire_api: str,
) -> None:
    first, later = await two_turns(openai_server, wire_api, home, {"not_streamed": True, "text": "hi"})
    assert_failed_clearly(openai_server, first, later, "application/json", "not an event stream")


async def test_a_chat_stream_that_stops_before_its_last_chunk_fails(
    openai_server: FakeOpenAIServer, home: Path,
) -> None:
    step = {"text": "the first half", "no_done": True, "finish_reason": None}
    first, later = await two_turns(openai_server, "chat", home, step)
    assert_failed_clearly(openai_server, first, later, "ended before its last chunk", "[DONE]", "finish_reason")


@pytest.mark.parametrize("end", [{"no_done": True}, {"finish_reason": None}], ids=["finish_reason only", "DONE only"])
async def test_a_chat_stream_ends_properly_with_either_done_or_a_finish_reason(
    openai_server: FakeOpenAIServer, home: Path, end: dict[str, Any],
) -> None:
    """Ollama, vLLM and llama.cpp versions differ in which of the two they send."""
    first, later = await two_turns(openai_server, "chat", home, {"text": "whole answer", **end})
    assert first.ok and first.text == "whole answer", first.error
    assert later.ok


def _incomplete(data: dict[str, Any]) -> None:
    if data["type"] == "response.completed":
        data["type"] = "response.incomplete"
        data["response"] |= {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}


async def test_a_reply_cut_at_the_token_limit_is_not_a_completed_turn(
    openai_server: FakeOpenAIServer, home: Path, wire_api: str,
) -> None:
    cut = {"finish_reason": "length"} if wire_api == "chat" else {"edit": _incomplete}
    first, later = await two_turns(openai_server, wire_api, home, {"text": "a long answer", **cut})
    reason = "length" if wire_api == "chat" else "max_output_tokens"
    assert_failed_clearly(openai_server, first, later, f"stopped early ({reason})")


# -- 2. fields of the wrong type ------------------------------------------------------------------


def _chat_delta(key: str, value: Any) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        for choice in data.get("choices", []):
            if key in choice["delta"]:
                choice["delta"][key] = value
    return edit


def _chat_usage(data: dict[str, Any]) -> None:
    if data.get("usage"):
        data["usage"]["prompt_tokens"] = "many"


def _responses_event(kind: str, change: Callable[[dict[str, Any]], None]) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        if data["type"] == kind:
            change(data)
    return edit


def _text_delta(data: dict[str, Any]) -> None:
    data["delta"] = {"text": SECRET}


def _responses_usage(data: dict[str, Any]) -> None:
    data["response"]["usage"]["input_tokens"] = "many"


def _call(**fields: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}, **fields}]}


MALFORMED = [
    ("chat", _call(name=5), "name"),
    ("chat", _call(name=[SECRET]), "name"),
    ("chat", _call(call_id=7), "id"),
    ("chat", {**_call(), "edit": _chat_delta("tool_calls", "abc")}, "tool_calls"),
    ("chat", {**_call(), "edit": _chat_delta("tool_calls", [SECRET])}, "tool_calls[0]"),
    ("chat", {"text": "hi", "edit": _chat_usage}, "prompt_tokens"),
    ("responses", _call(call_id=7), "call_id"),
    ("responses", _call(name=["add", SECRET]), "name"),
    ("responses", {"text": "hi", "edit": _responses_event("response.output_text.delta", _text_delta)}, "delta"),
    ("responses", {"text": "hi", "edit": _responses_event("response.completed", _responses_usage)}, "input_tokens"),
]


@pytest.mark.parametrize(("wire", "step", "key"), MALFORMED, ids=[f"{w}-{k}" for w, _, k in MALFORMED])
async def test_a_field_of_the_wrong_type_is_a_clear_error_naming_it(
    openai_server: FakeOpenAIServer, home: Path, wire: str, step: dict[str, Any], key: str,
) -> None:
    first, later = await two_turns(openai_server, wire, home, step)
    assert_failed_clearly(openai_server, first, later, f"{key} is ")
    assert first.error_code == "server"


async def test_a_malformed_reply_is_not_asked_for_again(
    openai_server: FakeOpenAIServer, home: Path, wire_api: str,
) -> None:
    """Asking again gets the same reply and costs another request."""
    openai_server.script([_call(call_id=7), LATER])
    config = config_for(openai_server, wire_api, home)
    config.model_providers["local"].request_max_retries = 3
    async with Session(config=config) as session:
        result = await session.run("hello")
    assert result.status == "failed" and len(openai_server.requests) == 1


async def test_arguments_sent_as_an_object_are_read_as_their_json(
    openai_server: FakeOpenAIServer, home: Path, wire_api: str,
) -> None:
    first, _ = await two_turns(openai_server, wire_api, home, _call(raw_arguments=True))
    assert first.ok and first.text == "a later turn", first.error
    assert sent_outputs(openai_server.requests[1], wire_api) == ["3"]


# -- 3. a call without a name ---------------------------------------------------------------------


async def test_a_call_without_a_name_is_answered_as_an_unknown_tool(
    openai_server: FakeOpenAIServer, home: Path, wire_api: str,
) -> None:
    first, _ = await two_turns(openai_server, wire_api, home, _call(name=""))
    assert first.ok and first.text == "a later turn", first.error
    [output] = sent_outputs(openai_server.requests[1], wire_api)
    assert "unknown tool ''" in output
