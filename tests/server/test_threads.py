"""agent / agent-reply through the real SDK client, over stdio and HTTP, both protocol generations."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

import nbagent
from nbagent.store import ThreadStore
from tests.server.conftest import MODES, HttpServer, Seen, ServerEnv, connect
from tests.waiting import until

TRANSPORTS = ["stdio", "http"]


def _http(request: pytest.FixtureRequest, transport: str) -> HttpServer | None:
    return request.getfixturevalue("http_server") if transport == "http" else None


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_start_reply_progress(transport: str, mode: str, senv: ServerEnv, request: pytest.FixtureRequest) -> None:
    http = _http(request, transport)
    model = senv.script({"text": "First answer, in a few words."}, {"text": "Second answer."})
    seen = Seen()
    async with connect(transport, mode, senv, http=http, seen=seen) as client:
        assert client.session.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        if client.server_info is not None or mode == "legacy":  # optional on the 2026 wire
            assert client.server_info is not None
            assert (client.server_info.name, client.server_info.version) == ("nbagent", nbagent.__version__)
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"agent", "agent-reply"}
        assert tools["agent"].output_schema and tools["agent"].output_schema["required"] == ["thread_id", "text"]
        first = await client.call_tool("agent", {"prompt": "hello", "model": model}, progress_callback=seen.on_progress)
        assert not first.is_error, first
        thread_id = first.structured_content["thread_id"]
        assert first.structured_content == {"thread_id": thread_id, "text": "First answer, in a few words."}
        assert first.content[0].text == "First answer, in a few words."  # type: ignore[union-attr]
        assert "turn started" in seen.progress and "turn completed" in seen.progress
        second = await client.call_tool("agent-reply", {"thread_id": thread_id, "prompt": "more"})
        assert second.structured_content == {"thread_id": thread_id, "text": "Second answer."}
        assert any(isinstance(d, dict) and d.get("event") == "turn_completed" for d in seen.logs)
    loaded = ThreadStore(senv.home).load(thread_id)
    users = [i.text for i in loaded.items if i.type == "user_message"]  # type: ignore[union-attr]
    assert users == ["hello", "more"]
    assert [t.entry for t in loaded.turns if t.status == "started"] == ["mcp_server", "mcp_server"]


async def test_reply_finds_a_live_thread_by_name_or_prefix_and_refuses_an_empty_id(senv: ServerEnv) -> None:
    """The thread a name names is the live one: no second writer is opened for it (which its
    lock would refuse), and an empty or unknown id is an error that says so, never a new thread."""
    model = senv.script({"text": "one"}, {"text": "two"}, {"text": "three"})
    async with connect("stdio", "2026-07-28", senv) as client:
        first = await client.call_tool("agent", {"prompt": "hello", "model": model, "thread_name": "notes"})
        thread_id = first.structured_content["thread_id"]
        by_name = await client.call_tool("agent-reply", {"thread_id": "notes", "prompt": "by name"})
        assert not by_name.is_error, by_name.content
        assert by_name.structured_content == {"thread_id": thread_id, "text": "two"}
        by_prefix = await client.call_tool("agent-reply", {"thread_id": thread_id[:12], "prompt": "by prefix"})
        assert by_prefix.structured_content == {"thread_id": thread_id, "text": "three"}
        empty = await client.call_tool("agent-reply", {"thread_id": "", "prompt": "lost?"})
        assert empty.is_error and "thread_id" in empty.content[0].text  # type: ignore[union-attr]
        unknown = await client.call_tool("agent-reply", {"thread_id": "nope", "prompt": "lost?"})
        assert unknown.is_error
        assert unknown.content[0].text == "agent-reply: no thread 'nope': pass the thread_id an agent call returned"  # type: ignore[union-attr]
    assert [t.id for t in ThreadStore(senv.home).list_threads()] == [thread_id]
    users = [i.text for i in ThreadStore(senv.home).load(thread_id).items if i.type == "user_message"]  # type: ignore[union-attr]
    assert users == ["hello", "by name", "by prefix"]


@pytest.mark.parametrize("mode", MODES)
async def test_reply_history_reaches_model(mode: str, senv: ServerEnv, openai_server: Any) -> None:
    """The inner model's second request carries the first exchange (real OpenAI wire, fake server)."""
    openai_server.script([{"text": "Paris."}, {"text": "About two million."}])
    config = {"model": "gpt-test", "model_providers": {"openai": {"base_url": openai_server.base_url}}}
    env_key = {"OPENAI_API_KEY": "sk-test"}
    senv_env = senv.env
    senv.env = lambda: {**senv_env(), **env_key}  # type: ignore[method-assign]
    async with connect("stdio", mode, senv) as client:
        first = await client.call_tool("agent", {"prompt": "Capital of France?", "config": config})
        assert first.structured_content["text"] == "Paris.", first
        thread_id = first.structured_content["thread_id"]
        second = await client.call_tool("agent-reply", {"thread_id": thread_id, "prompt": "Its population?"})
        assert second.structured_content["text"] == "About two million."
    body = json.dumps(openai_server.requests[-1])
    assert "Capital of France?" in body and "Paris." in body and "Its population?" in body


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_cancel_interrupts_turn(transport: str, mode: str, senv: ServerEnv, request: pytest.FixtureRequest) -> None:
    http = _http(request, transport)
    model = senv.script({"tool_calls": [{"name": "mcp__rec__slow", "arguments": {"seconds": 30}}]}, {"text": "after"})
    seen = Seen()
    args = {"prompt": "be slow", "model": model, "policy": "full-auto", "config": senv.recorder_config()}
    async with connect(transport, mode, senv, http=http, seen=seen) as client:
        with anyio.move_on_after(60):
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: client.call_tool("agent", args, progress_callback=seen.on_progress))
                await until(lambda: any(r["tool"] == "slow_start" for r in senv.records()), f"the slow call ({seen.progress})")
                tg.cancel_scope.cancel()
        # The server recorded the abort in the thread's rollout.
        def aborted() -> bool:
            threads = ThreadStore(senv.home).list_threads()
            return bool(threads) and any(t.status == "aborted" for t in ThreadStore(senv.home).load(threads[0].id).turns)

        await until(aborted, "the turn to be recorded as aborted", 10)
        # The connection stays usable after a cancelled call.
        await client.list_tools()
    assert not any(r["tool"] == "slow_end" for r in senv.records())


@pytest.mark.parametrize("mode", MODES)
async def test_threads_run_concurrently(mode: str, senv: ServerEnv) -> None:
    slow = {"tool_calls": [{"name": "mcp__rec__slow", "arguments": {"seconds": 2}}]}
    args = [{"prompt": f"job {i}", "model": senv.script(slow, {"text": f"done {i}"}), "policy": "full-auto",
             "config": senv.recorder_config()} for i in range(3)]
    async with connect("stdio", mode, senv) as client:
        results: list[Any] = [None] * 3

        async def one(i: int) -> None:
            results[i] = await client.call_tool("agent", args[i])

        async with anyio.create_task_group() as tg:
            for i in range(3):
                tg.start_soon(one, i)
    assert [r.structured_content["text"] for r in results] == ["done 0", "done 1", "done 2"]
    assert len({r.structured_content["thread_id"] for r in results}) == 3
    # Server-side evidence of overlap: all three tool calls started before the first one ended.
    kinds = [r["tool"] for r in senv.records()]
    assert kinds[:3] == ["slow_start"] * 3, kinds
