"""A model's output that is not Unicode text never fails the turn or corrupts the history.

A lone surrogate (``"\\ud800"`` in a reply's JSON, which the ``openai`` client and ``json`` both
decode into a ``str`` no encoder writes) in a reply's text, its reasoning, a tool call's name or
its id is read as U+FFFD where model output enters nbagent, for every wire: the turn completes,
every event and record holds Unicode text, a mangled name names no tool (the model is told),
and ids stay unique and the same on a call and its output. A failure quoting such words from
the server fails only its turn. A rollout holding such text (written by hand or another program)
is read the same way instead of losing its lines.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal

import pytest

from nbagent import Session
from nbagent.config import Config, ModelProviderConfig
from nbagent.protocol import Event
from nbagent.store.rollout import read_rollout
from tests.core.conftest import home  # noqa: F401 - fixture
from tests.fakes.openai_server import FakeOpenAIServer
from tests.security.untrusted_fixtures import replay

KINDS = ["replay", "chat", "responses"]
LONE, OTHER = "\ud800", "\udfff"
BAD = "\ufffd"
REPLIES: list[dict[str, Any]] = [
    {
        "reasoning": f"think {LONE}",
        "text": f"hello {LONE} there",
        "tool_calls": [
            {"name": f"get{LONE}", "call_id": f"call_{LONE}", "arguments": {"key": "a"}},
            {"name": "get", "call_id": f"call_{OTHER}", "arguments": {"key": "b"}},
        ],
    },
    {"text": f"done {OTHER}"},
]
"""The second call's id differs from the first only in its lone surrogate: read, both are
``call_\\ufffd``, and the second must become another id."""


def _model(kind: str, server: FakeOpenAIServer, tmp_path: Path, replies: list[dict[str, Any]] = REPLIES) -> Config:
    if kind == "replay":
        return Config(model=replay(tmp_path / "script.json", *replies), approval_policy="full-auto")
    server.script(replies)
    wire: Literal["chat", "responses"] = "chat" if kind == "chat" else "responses"
    provider = ModelProviderConfig(base_url=server.base_url, wire_api=wire, request_max_retries=0)
    config = Config(model="test-model", model_provider="local", model_providers={"local": provider},
                    approval_policy="full-auto")  # fmt: skip
    config.api_key = "sk-test-key-0123456789"
    return config


def _sent_ids(body: dict[str, Any], kind: str) -> tuple[list[str], list[str]]:
    """The call ids and the output ids a request sent back to the provider."""
    if kind == "responses":
        items = body["input"]
        return ([i["call_id"] for i in items if i.get("type") == "function_call"],
                [i["call_id"] for i in items if i.get("type") == "function_call_output"])  # fmt: skip
    messages = body["messages"]
    return ([c["id"] for m in messages for c in m.get("tool_calls", [])],
            [m["tool_call_id"] for m in messages if m["role"] == "tool"])  # fmt: skip


def _unicode(value: str) -> bool:
    return not any("\ud800" <= ch <= "\udfff" for ch in value)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", KINDS)
async def test_a_reply_that_is_not_unicode_text_is_read_as_text_and_the_turn_completes(
    kind: str, openai_server: FakeOpenAIServer, home: Path, tmp_path: Path  # noqa: F811
) -> None:
    deltas: list[tuple[str, str]] = []

    def front_end(event: Event) -> None:
        if event.msg.type in ("agent_message_delta", "reasoning_delta"):
            deltas.append((event.msg.type, event.msg.delta))

    async with Session(config=_model(kind, openai_server, tmp_path)) as session:
        session.register_tool(lambda key: key.upper(), name="get", read_only=True)
        session.subscribe(front_end)
        result = await session.run("go")
    assert (result.status, result.error, result.text) == ("completed", None, f"done {BAD}")
    assert all(_unicode(delta) for _, delta in deltas), deltas
    assert "".join(d for t, d in deltas if t == "agent_message_delta") == f"hello {BAD} theredone {BAD}"

    lines, warnings = read_rollout(home / "threads" / f"{result.thread_id}.jsonl")
    assert warnings == []
    items = [line.item for line in lines if line.type == "item"]
    assert [i.summary for i in items if i.type == "reasoning"] == [f"think {BAD}"]
    assert [i.text for i in items if i.type == "assistant_message"] == [f"hello {BAD} there", f"done {BAD}"]
    ids = [f"call_{BAD}", f"call_{BAD}_2"]
    assert [(i.call_id, i.name) for i in items if i.type == "function_call"] == list(zip(ids, [f"get{BAD}", "get"], strict=True))
    outputs = {i.call_id: i for i in items if i.type == "function_call_output"}
    assert list(outputs) == ids
    assert outputs[ids[0]].is_error and outputs[ids[0]].output.startswith(f"unknown tool 'get{BAD}'")
    assert outputs[ids[1]].output == "B"
    if kind != "replay":
        assert _sent_ids(openai_server.requests[1], kind) == (ids, ids)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", KINDS)
async def test_a_failure_in_the_servers_words_that_are_not_unicode_fails_only_its_turn(
    kind: str, openai_server: FakeOpenAIServer, home: Path, tmp_path: Path  # noqa: F811
) -> None:
    """The server's words quoted in a failure are recorded and shown like a reply's text; the
    session takes the next turn."""
    said = f"overloaded {LONE} now"
    failing = {"error": {"code": "server", "message": said}} if kind == "replay" else {
        "error_mid_stream": 500, "text": "a b c", "message": said}  # fmt: skip
    async with Session(config=_model(kind, openai_server, tmp_path, [failing, {"text": "again"}])) as session:
        failed = await asyncio.wait_for(session.run("go"), 20)
        again = await asyncio.wait_for(session.run("more"), 20)
    assert failed.status == "failed" and f"overloaded {BAD} now" in (failed.error or ""), failed
    assert (again.status, again.text) == ("completed", "again")
    lines, warnings = read_rollout(home / "threads" / f"{again.thread_id}.jsonl")
    assert warnings == []
    assert [line.reason for line in lines if line.type == "turn" and line.status == "failed"] == [failed.error]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("written", "read"), [(b"\\ud800", BAD), (b"\xed\xa0\x80", BAD * 3)], ids=["escape", "raw"])
async def test_a_rollout_holding_text_that_is_not_unicode_is_resumed_whole(
    written: bytes, read: str, home: Path, tmp_path: Path  # noqa: F811
) -> None:
    """The reply's text, its call's name and id in the file hold a lone surrogate (as a JSON
    escape, or as the bytes CESU-8 writes for one): the thread resumes with every line, each
    such character read as U+FFFD, and its next turn completes."""
    first = replay(tmp_path / "first.json", {"text": "hello MARK", "tool_calls": [
        {"name": "getMARK", "call_id": "call_MARK", "arguments": {}}]}, {"text": "done"})  # fmt: skip
    async with Session(model=first, policy="full-auto") as session:
        result = await session.run("go")
        before = len(session._thread.items)
    path = home / "threads" / f"{result.thread_id}.jsonl"
    path.write_bytes(path.read_bytes().replace(b"MARK", written))

    async with Session(model=replay(tmp_path / "next.json", {"text": "again"}), thread=result.thread_id) as session:
        items = list(session._thread.items)
        again = await session.run("more")
    assert len(items) == before
    assert [i.text for i in items if i.type == "assistant_message"] == [f"hello {read}", "done"]
    calls = [(i.call_id, i.name) for i in items if i.type == "function_call"]
    assert calls == [(f"call_{read}", f"get{read}")]
    assert [i.call_id for i in items if i.type == "function_call_output"] == [f"call_{read}"]
    assert (again.status, again.text) == ("completed", "again")
    _, warnings = read_rollout(path)
    assert warnings == []
