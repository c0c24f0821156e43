"""Clients that misbehave (call a thread another client is running, vanish mid-question, close
the pipes) cannot break another client's turn, hold a session forever, or put words in the
user's mouth in the thread's history."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import anyio
import pytest

from tests.server.conftest import RECORDER, HttpServer, ServerEnv, connect, start_http_server
from tests.waiting import until

pytestmark = pytest.mark.timeout(120)


def _recorder(senv: ServerEnv) -> str:
    servers = {"rec": {"command": sys.executable, "args": [str(RECORDER)], "env": {"RECORD_FILE": str(senv.record)}}}
    return f"mcp_servers={json.dumps(servers)}"


@pytest.fixture
def servers() -> Iterator[list[HttpServer]]:
    started: list[HttpServer] = []
    yield started
    for server in started:
        server.process.terminate()
        try:
            server.process.wait(10)
        except subprocess.TimeoutExpired:
            server.process.kill()


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
