"""``%agent serve`` backend: a live session's tools over HTTP, calls through its approvals."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from nbagent import Session
from nbagent.kit.notebook_server import connection_snippets, start_notebook_server
from nbagent.protocol import ApprovalDecision, Event


@pytest.fixture
def nb_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NBAGENT_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


async def test_session_tools_served_through_approvals(nb_home: Path) -> None:
    ran: list[str] = []

    def peek(cell: int) -> str:
        """Read a cell."""
        ran.append(f"peek {cell}")
        return f"cell {cell} source"

    def wipe(cell: int) -> str:
        """Delete a cell."""
        ran.append(f"wipe {cell}")
        return "wiped"

    events: list[Event] = []
    async with Session(model="replay:" + str(nb_home / "none.json"), policy="on-request", interactive=True) as session:
        session.register_tool(peek, read_only=True)
        session.register_tool(wipe, destructive=True)
        decisions = iter(["approve", "deny"])

        def on_event(event: Event) -> None:
            events.append(event)
            if event.msg.type == "approval_requested":
                session.submit(ApprovalDecision(call_id=event.msg.call_id, decision=next(decisions)))  # type: ignore[union-attr]

        session.subscribe(on_event)
        handle = await start_notebook_server(session)
        try:
            assert handle.url.startswith("http://127.0.0.1:") and len(handle.token) >= 32
            async with httpx.AsyncClient() as plain:  # the server shares this loop: never block it
                assert (await plain.post(handle.url, json={}, timeout=5)).status_code == 401
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {handle.token}"}) as hc:
                async with Client(streamable_http_client(handle.url, http_client=hc), mode="legacy") as client:
                    names = {t.name for t in (await client.list_tools()).tools}
                    assert {"peek", "wipe"} <= names
                    read = await client.call_tool("peek", {"cell": 2})
                    assert not read.is_error and read.content[0].text == "cell 2 source"  # type: ignore[union-attr]
                    approved = await client.call_tool("wipe", {"cell": 1})
                    assert not approved.is_error, approved
                    denied = await client.call_tool("wipe", {"cell": 3})
                    assert denied.is_error
        finally:
            await handle.stop()
    assert ran == ["peek 2", "wipe 1"]
    kinds = [e.msg.type for e in events]
    assert kinds.count("tool_call_begin") == 3 and kinds.count("tool_call_end") == 3
    assert kinds.count("approval_requested") == 2


def test_snippets_parse() -> None:
    s = connection_snippets("http://127.0.0.1:4321/mcp", Path("/home/me/.nbagent/run/notebook-server-4321.token"))
    codex = tomllib.loads(s["codex_config_toml"])["mcp_servers"]["nbagent_notebook"]
    assert codex == {"url": "http://127.0.0.1:4321/mcp", "bearer_token_env_var": "NBAGENT_NOTEBOOK_TOKEN"}
    entry: dict[str, Any] = json.loads(s["mcp_json"])["mcpServers"]["nbagent_notebook"]
    assert entry["url"] == "http://127.0.0.1:4321/mcp" and entry["type"] == "http"
    assert entry["headers"]["Authorization"] == "Bearer ${NBAGENT_NOTEBOOK_TOKEN}"
    assert s["env"] == 'export NBAGENT_NOTEBOOK_TOKEN="$(cat /home/me/.nbagent/run/notebook-server-4321.token)"'


async def test_serve_on_a_port_in_use_says_so_and_leaves_no_serving_display(
    nb_home: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    import socket

    from nbagent.notebook.agent import KernelAgent
    from nbagent.notebook.commands import run_line
    from tests.waiting import until

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    agent = KernelAgent(shell=None, session_factory=lambda: Session(model="replay"))
    try:
        run_line(agent, f"serve --port {port}")
        await until(lambda: agent.outside_view is None, "the failed serve to drop its display", timeout=30)
        out, err = capsys.readouterr()
        assert "not serving: " in out + err and agent.server is None
        assert str(port) in err  # the error names the port that was in use
    finally:
        taken.close()
        await agent.close()


async def test_a_served_tools_secret_reaches_the_caller_redacted(nb_home: Path) -> None:
    """A caller of ``%agent serve`` sees what the thread's rollout holds: the secret a server
    was given and hands back, in its tool's description and its result, is redacted."""
    import sys

    from nbagent.config import McpServerConfig

    secret = "tok-SERVED-secret-4471"
    leaky = Path(__file__).resolve().parents[1] / "servers" / "leaky.py"
    servers = {"leaky": McpServerConfig(command=sys.executable, args=[str(leaky)], env={"LEAKY_TOKEN": secret})}
    async with Session(model="replay:" + str(nb_home / "none.json"), policy="full-auto", mcp_servers=servers) as session:
        await session._servers.ready()
        handle = await start_notebook_server(session)
        try:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {handle.token}"}) as hc:
                async with Client(streamable_http_client(handle.url, http_client=hc), mode="legacy") as client:
                    listed = await client.list_tools()
                    (whoami,) = [t for t in listed.tools if t.name.endswith("whoami")]
                    result = await client.call_tool(whoami.name, {"note": {"n": 1}})
        finally:
            await handle.stop()
    seen = listed.model_dump_json() + result.model_dump_json()
    assert "Bearer [redacted]" in (whoami.description or "") and "[redacted]" in result.model_dump_json()
    assert secret not in seen
