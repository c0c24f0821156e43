"""Clients that misbehave (call a thread another client is running, vanish mid-question, close
the pipes) cannot break another client's turn, hold a session forever, or put words in the
user's mouth in the thread's history."""

from __future__ import annotations

import json
import subprocess
import sys

import anyio
import mcp_types as types
import pytest

from nbagent.store import ThreadStore
from tests.server.conftest import RECORDER, HttpServer, ServerEnv, connect, start_http_server
from tests.server.test_session_lifetime import recorders
from tests.waiting import until, wait_for

pytestmark = pytest.mark.timeout(120)


def _recorder(senv: ServerEnv) -> str:
    servers = {"rec": {"command": sys.executable, "args": [str(RECORDER)], "env": {"RECORD_FILE": str(senv.record)}}}
    return f"mcp_servers={json.dumps(servers)}"


HANGING_CLIENT = """
import asyncio, sys
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

async def elicit(context, params):
    print("asked", flush=True)
    await asyncio.Event().wait()  # the person never answers; then the process is killed

async def main():
    async with httpx2.AsyncClient(headers={"Authorization": "Bearer " + sys.argv[2]}, timeout=600) as hc:
        async with Client(streamable_http_client(sys.argv[1], http_client=hc), mode="legacy",
                          elicitation_callback=elicit) as client:
            await client.call_tool("agent", {"prompt": "write it"})

asyncio.run(main())
"""
"""A legacy HTTP client that is asked for an approval, never answers, and is then killed (no DELETE)."""


def _approvals(senv: ServerEnv) -> list[dict[str, object]]:
    with ThreadStore(senv.home) as store:
        return [i.model_dump() for s in store.list_threads() for i in store.load(s.id).items if i.type == "approval"]


async def test_a_refused_reply_leaves_the_running_turn_to_its_client(
    senv: ServerEnv, servers: list[HttpServer]
) -> None:
    model = senv.script({"tool_calls": [{"name": "mcp__rec__slow", "arguments": {"seconds": 4}}]}, {"text": "Slept."})
    server = start_http_server(senv, "--model", model, "--policy", "full-auto", "-c", _recorder(senv))
    servers.append(server)
    done: list[object] = []
    async with connect("http", "legacy", senv, http=server) as first:
        async with anyio.create_task_group() as tg:
            async def run_first() -> None:
                done.append(await first.call_tool("agent", {"prompt": "be slow", "thread_name": "job"}))

            tg.start_soon(run_first)
            await until(lambda: any(r["tool"] == "slow_start" for r in senv.records()), "the first turn to be running")
            async with connect("http", "legacy", senv, http=server) as second:
                refused = await second.call_tool("agent-reply", {"thread_id": "job", "prompt": "mine now"})
            text = refused.content[0].text  # type: ignore[union-attr]
            assert refused.is_error and "running a turn" in text, text
    result = done[0]
    assert not result.is_error and result.structured_content["text"] == "Slept.", result  # type: ignore[attr-defined]
    assert [r["tool"] for r in senv.records()] == ["slow_start", "slow_end"]


async def test_a_client_killed_while_asked_frees_its_session_for_the_next_caller(
    senv: ServerEnv, servers: list[HttpServer]
) -> None:
    model = senv.script({"tool_calls": [{"name": "mcp__rec__write_note", "arguments": {"text": "hi"}}]},
                        {"text": "Went on."})
    server = start_http_server(senv, "--model", model, "--policy", "on-request", "-c", _recorder(senv),
                               "--max-sessions", "1", "--ask-timeout", "1", "--session-idle-timeout", "1")
    servers.append(server)
    client = subprocess.Popen([sys.executable, "-c", HANGING_CLIENT, server.url, server.token], env=senv.env(),
                              stdout=subprocess.PIPE, text=True)
    try:
        assert client.stdout is not None and client.stdout.readline() == "asked\n"
    finally:
        client.kill()
        client.wait(10)
    approvals = wait_for(lambda: _approvals(senv), "the unanswered approval to be settled")
    assert [(a["decision"], a["by"]) for a in approvals] == [("deny", "timeout")], approvals
    wait_for(lambda: not recorders(server), "the dead client's session to close")
    async with connect("http", "legacy", senv, http=server) as other:
        result = await other.call_tool("agent", {"prompt": "my turn", "policy": "never"})
    assert not result.is_error and result.structured_content["text"] == "Went on.", result  # a session of its own
    assert senv.records() == []  # the unanswered call never ran


async def test_an_approval_the_client_fails_to_ask_is_not_the_users_no(
    senv: ServerEnv, servers: list[HttpServer]
) -> None:
    model = senv.script({"tool_calls": [{"name": "mcp__rec__write_note", "arguments": {"text": "hi"}}]},
                        {"text": "Went on."})
    server = start_http_server(senv, "--model", model, "--policy", "on-request", "-c", _recorder(senv),
                               "--ask-timeout", "1")
    servers.append(server)

    def broken(params: types.ElicitRequestParams) -> types.ElicitResult:
        raise RuntimeError("this client's form is broken")

    async with connect("http", "legacy", senv, http=server, answer=broken) as client:
        result = await client.call_tool("agent", {"prompt": "write it"})
    assert not result.is_error and result.structured_content["text"] == "Went on.", result
    thread = ThreadStore(senv.home).load(result.structured_content["thread_id"])
    approvals = [i for i in thread.items if i.type == "approval"]
    assert [(a.decision, a.by) for a in approvals] == [("deny", "timeout")], approvals  # type: ignore[union-attr]
    told = [i.output for i in thread.items if i.type == "function_call_output"]  # type: ignore[union-attr]
    assert len(told) == 1 and "did not run" in str(told[0]) and "No answer" in str(told[0]), told
    assert "user denied" not in str(told[0]).lower()
    assert senv.records() == []


def test_a_client_that_closes_the_pipes_while_asked_ends_the_stdio_server_quietly(senv: ServerEnv) -> None:
    model = senv.script({"tool_calls": [{"name": "mcp__rec__write_note", "arguments": {"text": "hi"}}]},
                        {"text": "Went on."})
    server = subprocess.Popen(
        [sys.executable, "-m", "nbagent.server", "--model", model, "--policy", "on-request", "-c", _recorder(senv)],
        env=senv.env(), cwd=senv.work, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert server.stdin is not None and server.stdout is not None

    def send(message: dict[str, object]) -> None:
        assert server.stdin is not None
        server.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        server.stdin.flush()

    try:
        send({"id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {
            "elicitation": {}}, "clientInfo": {"name": "closer", "version": "1"}}})
        assert '"result"' in server.stdout.readline()
        send({"method": "notifications/initialized"})
        send({"id": 2, "method": "tools/call", "params": {"name": "agent", "arguments": {"prompt": "write it"}}})
        while '"elicitation/create"' not in (line := server.stdout.readline()):
            assert line, "the server ended before it asked"
        server.stdout.close()
        server.stdin.close()
        code = server.wait(60)
    finally:
        server.kill()
    errors = server.stderr.read() if server.stderr else ""
    assert code == 0 and len(errors.splitlines()) <= 1, errors
    approvals = _approvals(senv)
    assert len(approvals) == 1 and approvals[0]["by"] != "user" and approvals[0]["decision"] == "deny", approvals
    with ThreadStore(senv.home) as store:
        [summary] = store.list_threads()
        assert [t.status for t in store.load(summary.id).turns][-1] in ("aborted", "completed")
    assert senv.records() == []
