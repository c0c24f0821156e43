"""``nbagent mcp-server --http`` does not hold sessions forever: a session (and the MCP server
processes it started) closes when its client disconnects, after an idle timeout, or when the cap
on live sessions needs room; its thread stays resumable from the rollout."""

from __future__ import annotations

import json

import psutil
import pytest

from nbagent.mcp.stdio import LAUNCHER
from nbagent.store import ThreadStore
from tests.server.conftest import RECORDER, HttpServer, ServerEnv, connect, start_http_server
from tests.waiting import until, wait_for


def recorders(server: HttpServer) -> list[psutil.Process]:
    """The recorder MCP servers running under the nbagent server process (not their launchers)."""
    found = []
    for child in psutil.Process(server.process.pid).children(recursive=True):
        try:
            argv = child.cmdline()
            if LAUNCHER in argv or child.status() == psutil.STATUS_ZOMBIE:
                continue
            if any(str(RECORDER) in part for part in argv):
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def serve(senv: ServerEnv, *extra: str) -> HttpServer:
    model = senv.script({"text": "Done."}, {"text": "Resumed."})
    servers = {"rec": senv.recorder()}
    return start_http_server(senv, "--model", model, "-c", f"mcp_servers={json.dumps(servers)}", *extra)


async def test_disconnect_closes_the_session(senv: ServerEnv, servers: list[HttpServer]) -> None:
    server = serve(senv)
    servers.append(server)
    async with connect("http", "legacy", senv, http=server) as client:
        first = await client.call_tool("agent", {"prompt": "hi"})
        assert not first.is_error, first
        assert len(recorders(server)) == 1  # the thread's MCP server, alive while the client is
    wait_for(lambda: not recorders(server), "the MCP server of a disconnected client's session still runs")
    thread_id = first.structured_content["thread_id"]
    async with connect("http", "legacy", senv, http=server) as client:  # another client resumes it
        again = await client.call_tool("agent-reply", {"thread_id": thread_id, "prompt": "more"})
    assert not again.is_error and again.structured_content["thread_id"] == thread_id, again
    users = [i.text for i in ThreadStore(senv.home).load(thread_id).items if i.type == "user_message"]  # type: ignore[union-attr]
    assert users == ["hi", "more"]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_idle_timeout_closes_the_session_and_the_thread_resumes(
    mode: str, senv: ServerEnv, servers: list[HttpServer]
) -> None:
    server = serve(senv, "--session-idle-timeout", "0.5")
    servers.append(server)
    async with connect("http", mode, senv, http=server) as client:
        first = await client.call_tool("agent", {"prompt": "hi", "policy": "never"})
        assert not first.is_error, first
        thread_id = first.structured_content["thread_id"]
        # The client stays connected; the idle session closes all the same.
        wait_for(lambda: not recorders(server), "an idle session's MCP server still runs")
        again = await client.call_tool("agent-reply", {"thread_id": thread_id, "prompt": "more"})
        assert not again.is_error, again
        assert again.structured_content == {"thread_id": thread_id, "text": "Done."}  # a fresh replay model
    loaded = ThreadStore(senv.home).load(thread_id)
    assert [i.text for i in loaded.items if i.type == "user_message"] == ["hi", "more"]  # type: ignore[union-attr]
    assert [t.policy for t in loaded.turns if t.status == "started"] == ["never", "never"]  # the caller's stricter choice


async def test_cap_on_live_sessions_closes_the_oldest_idle(senv: ServerEnv, servers: list[HttpServer]) -> None:
    server = serve(senv, "--max-sessions", "2")
    servers.append(server)
    threads = []
    async with connect("http", "legacy", senv, http=server) as client:
        for n in range(5):
            result = await client.call_tool("agent", {"prompt": f"job {n}"})
            assert not result.is_error, result
            threads.append(result.structured_content["thread_id"])
            wait_for(lambda: len(recorders(server)) <= 2, f"more than 2 live sessions after {n + 1} calls")
        oldest = await client.call_tool("agent-reply", {"thread_id": threads[0], "prompt": "back"})
        assert not oldest.is_error and oldest.structured_content["thread_id"] == threads[0], oldest
        wait_for(lambda: len(recorders(server)) <= 2, "the resumed thread went over the cap")


async def test_cap_refuses_when_every_session_is_busy(senv: ServerEnv, servers: list[HttpServer]) -> None:
    slow = senv.script({"tool_calls": [{"name": "mcp__rec__slow", "arguments": {"seconds": 30}}]}, {"text": "ok"})
    server = start_http_server(senv, "--model", slow, "--policy", "full-auto", "--max-sessions", "1", "-c",
                               "mcp_servers=" + json.dumps({"rec": senv.recorder()}))
    servers.append(server)
    import anyio

    async with connect("http", "legacy", senv, http=server) as busy, connect("http", "legacy", senv,
                                                                             http=server) as other:
        async with anyio.create_task_group() as tg:
            tg.start_soon(busy.call_tool, "agent", {"prompt": "be slow"})
            await until(lambda: any(r["tool"] == "slow_start" for r in senv.records()), "the first call to be running")
            refused = await other.call_tool("agent", {"prompt": "one more"})
            tg.cancel_scope.cancel()
    text = refused.content[0].text  # type: ignore[union-attr]
    assert refused.is_error and "--max-sessions" in text and "1" in text, text
