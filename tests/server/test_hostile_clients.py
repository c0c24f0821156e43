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
from tests.server.conftest import HttpServer, ServerEnv, connect, start_http_server
from tests.server.test_session_lifetime import recorders
from tests.waiting import until, wait_for

pytestmark = pytest.mark.timeout(120)


def _recorder(senv: ServerEnv, **settings: str) -> str:
    servers = {"rec": senv.recorder(**settings)}
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
    # --ask-timeout bounds each ask of a turn, even where the config lets an approval wait longer.
    server = start_http_server(senv, "--model", model, "--policy", "on-request", "-c", _recorder(senv),
                               "-c", "approval_timeout_sec=900",
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


ASKS = {
    # kind: (the model's call, the policy under which it asks, the record's answer when nobody answers)
    "approval": ({"name": "mcp__rec__write_note", "arguments": {"text": "hi"}}, "on-request", "deny"),
    "question": ({"name": "mcp__rec__ask_name", "arguments": {}}, "full-auto", "cancel"),
}


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("kind", ASKS)
async def test_an_ask_the_client_fails_to_show_ends_unanswered_at_once(
    senv: ServerEnv, servers: list[HttpServer], kind: str, transport: str
) -> None:
    """The client answers the elicitation with an error: the ask ends then, as nobody answering
    (not the user's no), and the turn goes on long before ``--ask-timeout``."""
    call, policy, fallback = ASKS[kind]
    model = senv.script({"tool_calls": [call]}, {"text": "Went on."})
    rec = _recorder(senv, protocol="legacy")  # its server pushes the question (ask_name)
    args = ("--model", model, "--policy", policy, "-c", rec, "--ask-timeout", "600")
    http = None
    if transport == "http":
        http = start_http_server(senv, *args)
        servers.append(http)

    def broken(params: types.ElicitRequestParams) -> types.ElicitResult:
        raise RuntimeError("this client's form is broken")

    with anyio.fail_after(30):  # the ask would otherwise wait out the 600 s
        async with connect(transport, "legacy", senv, http=http, answer=broken, server_args=args) as client:
            result = await client.call_tool("agent", {"prompt": "ask it"})
    assert not result.is_error and result.structured_content["text"] == "Went on.", result
    with ThreadStore(senv.home) as store:
        thread = store.load(result.structured_content["thread_id"])
    record = "approval" if kind == "approval" else "elicitation"
    [ask] = [i.model_dump() for i in thread.items if i.type == record]
    assert (ask.get("decision") or ask.get("action"), ask["by"]) == (fallback, "unanswered"), ask
    assert ask["message"] == "The MCP client could not be asked: this client's form is broken", ask
    [told] = [str(i.output) for i in thread.items if i.type == "function_call_output"]  # type: ignore[union-attr]
    if kind == "approval":
        assert "not approved; it did not run. Reason: The MCP client could not be asked" in told, told
        assert "user denied" not in told.lower() and senv.records() == []
    else:
        assert told.endswith("no name (cancel)") and [r["tool"] for r in senv.records()] == ["ask_name"], told


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
