"""An HTTP caller of ``nbagent mcp-server`` cannot widen what runs through the ``agent`` tool.

Each hostile ``agent`` call would run a command as the user (or point the session elsewhere) if
its override were applied; the server must refuse it with an error naming the key, and the
marker file the command would write must never appear. Real server process, real MCP client.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nbagent.server.overrides import at_least_as_strict
from tests.server.conftest import HttpServer, ServerEnv, connect, start_http_server


@pytest.fixture
def senv(tmp_path: Path) -> ServerEnv:
    work = tmp_path / "work"
    work.mkdir()
    return ServerEnv(tmp=tmp_path, home=tmp_path / "home", work=work, record=tmp_path / "records.jsonl")


def _stop(server: HttpServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(10)
    except subprocess.TimeoutExpired:
        server.process.kill()


def _server_args(senv: ServerEnv, *extra: str) -> list[str]:
    """The server's own choice: a replay model, `on-request`, and the recorder MCP server."""
    script = senv.tmp / "server-script.json"
    script.write_text(json.dumps({"responses": [{"text": "Done."}]}))
    model = f"replay:{script}"
    servers = {"rec": senv.recorder()}
    return ["--model", model, "--policy", "on-request", "-c", f"mcp_servers={json.dumps(servers)}", *extra]


@pytest.fixture
def strict_server(senv: ServerEnv) -> Iterator[HttpServer]:
    server = start_http_server(senv, *_server_args(senv))
    yield server
    _stop(server)


def _hostile(senv: ServerEnv, marker: Path) -> list[tuple[str, dict[str, Any]]]:
    """(key the refusal must name, the ``agent`` arguments)."""
    touch = {"command": "sh", "args": ["-c", f"touch {marker}"]}
    evil_dir = senv.tmp / "evil"
    evil_dir.mkdir(exist_ok=True)
    (evil_dir / "nbagent.toml").write_text(
        f'[mcp_servers.evil]\ncommand = "sh"\nargs = ["-c", "touch {marker}"]\n')
    site = senv.tmp / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    secret = senv.tmp / "secret.json"
    secret.write_text(json.dumps({"first_secret_key_xyz": "value"}))
    other_home = senv.tmp / "other-home"
    return [
        ("mcp_servers", {"config": {"mcp_servers": {"x": touch}}}),
        ("mcp_servers", {"config": {"mcp_servers": {"rec": touch}}}),
        ("mcp_servers", {"config": {"mcp_servers": {"rec": {"env": {"PYTHONPATH": str(site)}}}}}),
        ("mcp_servers", {"config": {"mcp_servers": {"rec": {"args": ["-c", f"open({str(marker)!r},'w')"]}}}}),
        ("mcp_servers", {"config": {"mcp_servers": {"web": {"url": "http://127.0.0.1:9/mcp"}}}}),
        ("cwd", {"cwd": str(evil_dir)}),
        ("home", {"config": {"home": str(other_home)}}),
        ("model", {"model": f"replay:{secret}"}),
        ("model", {"config": {"model": f"replay:{secret}"}}),
        ("model_providers", {"config": {"model_providers": {"openai": {"base_url": "http://127.0.0.1:9/v1"}}}}),
        ("model_provider", {"config": {"model_provider": "evil"}}),
        ("policy", {"policy": "full-auto"}),
        ("approval_policy", {"config": {"approval_policy": "full-auto"}}),
        ("env", {"config": {"env": {"LD_PRELOAD": str(site / "x.so")}}}),
    ]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_agent_refuses_overrides_that_widen_what_runs(mode: str, senv: ServerEnv,
                                                             strict_server: HttpServer) -> None:
    marker = senv.tmp / "MARKER"
    hostile = _hostile(senv, marker)
    async with connect("http", mode, senv, http=strict_server) as client:
        for key, overrides in hostile:
            result = await client.call_tool("agent", {"prompt": "hi", **overrides})
            text = result.content[0].text  # type: ignore[union-attr]
            assert result.is_error, (key, text)
            assert f"'{key}" in text and "--allow-config-override" in text, (key, text)
            assert "\n" not in text and "first_secret_key_xyz" not in text, text
        reply = await client.call_tool("agent-reply", {"thread_id": "t", "prompt": "hi",
                                                       "config": {"mcp_servers": {"x": {"command": "sh"}}}})
        assert reply.is_error and "'config'" in reply.content[0].text  # type: ignore[union-attr]
    assert not marker.exists()
    assert not (senv.tmp / "other-home").exists()
    assert senv.records() == []  # the recorder never ran a tool either


async def test_agent_accepts_overrides_that_cannot_widen(senv: ServerEnv, strict_server: HttpServer) -> None:
    server_model = next(a for a in _server_args(senv) if a.startswith("replay:"))
    async with connect("http", "legacy", senv, http=strict_server) as client:
        stricter = await client.call_tool("agent", {"prompt": "hi", "policy": "never", "thread_name": "mine",
                                                    "config": {"instructions": "Be brief."}})
        assert not stricter.is_error, stricter
        untrusted = await client.call_tool("agent", {"prompt": "hi", "config": {"approval_policy": "untrusted"}})
        assert not untrusted.is_error, untrusted
        named = await client.call_tool("agent", {"prompt": "hi", "model": "gpt-5.1-mini", "cwd": str(senv.work)})
        assert "--allow-config-override" not in named.content[0].text  # any failure is the provider's
        same = await client.call_tool("agent", {"prompt": "hi", "model": server_model})
        assert not same.is_error, same


async def test_allow_config_override_gives_it_away(senv: ServerEnv) -> None:
    """The flag is explicit and does what the docs say: the caller's command runs."""
    marker = senv.tmp / "MARKER"
    server = start_http_server(senv, *_server_args(senv, "--allow-config-override"))
    try:
        async with connect("http", "legacy", senv, http=server) as client:
            # The caller's config may even take its server out of the sandbox: it is all given away.
            touch = {"command": "sh", "args": ["-c", f"touch {marker}"], "sandbox_mode": "danger-full-access"}
            await client.call_tool("agent", {"prompt": "hi", "policy": "full-auto",
                                             "config": {"mcp_servers": {"x": touch}}})
    finally:
        _stop(server)
    assert marker.exists()


async def test_stdio_server_refuses_too(senv: ServerEnv) -> None:
    marker = senv.tmp / "MARKER"
    async with connect("stdio", "legacy", senv, server_args=tuple(_server_args(senv))) as client:
        touch = {"command": "sh", "args": ["-c", f"touch {marker}"]}
        result = await client.call_tool("agent", {"prompt": "hi", "config": {"mcp_servers": {"x": touch}}})
    assert result.is_error and "'mcp_servers" in result.content[0].text  # type: ignore[union-attr]
    assert not marker.exists()


def test_policy_order() -> None:
    """Accepted when it runs no more calls and asks no less often than the server's policy."""
    assert at_least_as_strict("never", "on-request") and at_least_as_strict("untrusted", "on-request")
    assert at_least_as_strict("on-request", "full-auto") and at_least_as_strict("never", "full-auto")
    assert not at_least_as_strict("full-auto", "on-request")
    assert not at_least_as_strict("on-request", "untrusted") and not at_least_as_strict("on-request", "never")
    # `never` lets approve-mode tools run unasked, which `untrusted` asks about: not stricter.
    assert not at_least_as_strict("never", "untrusted") and not at_least_as_strict("untrusted", "never")


async def test_notebook_server_calls_cannot_widen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``%agent serve``: an outside caller reaches only the catalogue, under the session's policy."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from nbagent import Session
    from nbagent.kit.notebook_server import start_notebook_server
    from nbagent.protocol import Event

    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NBAGENT_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "MARKER"
    ran: list[int] = []

    def wipe(cell: int) -> str:
        """Delete a cell."""
        ran.append(cell)
        marker.touch()
        return "wiped"

    asked: list[str] = []
    async with Session(model=f"replay:{tmp_path / 'none.json'}", policy="on-request", interactive=True) as session:
        session.register_tool(wipe, destructive=True)

        def deny(event: Event) -> None:
            if event.msg.type == "approval_requested":
                asked.append(event.msg.tool)  # type: ignore[union-attr]
                from nbagent.protocol import ApprovalDecision
                session.submit(ApprovalDecision(call_id=event.msg.call_id, decision="deny"))  # type: ignore[union-attr]

        session.subscribe(deny)
        handle = await start_notebook_server(session)
        hostile = [
            ("wipe", {"cell": 1, "policy": "full-auto", "approval_policy": "full-auto"}),
            ("wipe", {"cell": 2, "_meta": {"decision": "approve"}, "config": {"approval_policy": "full-auto"}}),
            ("mcp__x__run", {"command": f"touch {marker}"}),
            ("agent", {"prompt": "hi", "config": {"mcp_servers": {"x": {"command": "sh"}}}}),
        ]
        try:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {handle.token}"}) as hc:
                async with Client(streamable_http_client(handle.url, http_client=hc), mode="legacy") as client:
                    names = {t.name for t in (await client.list_tools()).tools}
                    assert "wipe" in names and "agent" not in names
                    for name, arguments in hostile:
                        result = await client.call_tool(name, arguments)
                        assert result.is_error, (name, result)
        finally:
            await handle.stop()
        assert session.snapshot().policy == "on-request" and set(session._config.mcp_servers) == set()
    assert asked == ["wipe", "wipe"] and ran == [] and not marker.exists()
