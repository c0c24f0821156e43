"""A sign-in nbagent cannot do safely, or at all, says why: an authorization endpoint off this
machine must be https, the loopback callback answers only requests addressed to it, and a login
that times out or cannot listen names its reason, not the task group that carried it."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nbagent.config import Config, McpServerConfig
from nbagent.mcp.connection import McpConnection
from nbagent.mcp.errors import McpStartupError
from nbagent.mcp.oauth.callback import LoopbackCallback
from nbagent.protocol import McpLoginRequired
from tests.cli.proc import nbagent
from tests.mcp.conftest import Answers, _free_port
from tests.mcp.oauth_helpers import OAuthServer, serve_oauth

INSECURE = "http://as.example/oauth"


@pytest.fixture
def oauth_server(tmp_path: Path) -> Iterator[OAuthServer]:
    yield from serve_oauth(tmp_path)


@pytest.fixture(params=["AUTHORIZE_AT", "TOKEN_AT"])
def insecure_server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[OAuthServer]:
    """Its metadata names a plain http endpoint on another host, to sign in at or to send the code to."""
    yield from serve_oauth(tmp_path, **{request.param: INSECURE})


async def test_an_http_endpoint_off_this_machine_is_never_offered(insecure_server: OAuthServer, tmp_path: Path) -> None:
    events: list[Any] = []
    config = Config(home=str(tmp_path / "home"), mcp_oauth_credentials_store="file")
    conn = McpConnection("remote", McpServerConfig(url=insecure_server.url, startup_timeout_sec=30),
                         log_dir=tmp_path / "logs", on_event=events.append, on_elicit=Answers(), config=config)  # fmt: skip
    try:
        with pytest.raises(McpStartupError) as failed:
            await conn.start()
    finally:
        await conn.aclose()
    message = str(failed.value)
    assert "'remote'" in message and INSECURE in message and "https" in message, message
    assert [e for e in events if isinstance(e, McpLoginRequired)] == []


async def _status(port: int, *headers: str) -> int:
    """The status the callback answers a redirect carrying ``headers``, sent byte for byte."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    lines = ["GET /callback?code=stolen&state=S HTTP/1.1", *headers, "Connection: close"]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    await writer.drain()
    reply = await reader.read()
    writer.close()
    return int(reply.split(b" ", 2)[1])


async def test_the_callback_answers_only_requests_addressed_to_it() -> None:
    port = _free_port()
    callback = LoopbackCallback(port, "remote")
    await callback.expect("https://as.example/authorize?state=S")
    hostile = {
        "another host": ["Host: evil.example"],
        "userinfo": [f"Host: 127.0.0.1:{port}@evil.example"],
        "another port": [f"Host: 127.0.0.1:{port + 1}"],
        "two hosts": [f"Host: 127.0.0.1:{port}", "Host: evil.example"],
        "no host": [],
    }
    try:
        answered = {name: await _status(port, *headers) for name, headers in hostile.items()}
        assert answered == dict.fromkeys(hostile, 421)
        assert await _status(port, f"Host: localhost:{port}") == 200
        result = await asyncio.wait_for(callback.wait(), 5)
    finally:
        await callback.close()
    assert result.code == "stolen"  # the one addressed to it, as a browser sends it


@pytest.mark.parametrize("why", ["timeout", "port in use"])
def test_a_login_that_fails_says_why(oauth_server: OAuthServer, tmp_path: Path, why: str) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        setting = "elicitation_timeout_sec = 1" if why == "timeout" else f"mcp_oauth_callback_port = {port}"
        (tmp_path / "nbagent.toml").write_text(
            f'mcp_oauth_credentials_store = "file"\n{setting}\n[mcp_servers.remote]\nurl = "{oauth_server.url}"\n'
        )
        proc = nbagent("-C", str(tmp_path), "mcp", "login", "remote", home=tmp_path / "home")
    reason = "no sign-in within 1 s" if why == "timeout" else f"cannot listen for the login callback on 127.0.0.1:{port}"
    assert proc.returncode == 1, proc
    assert reason in proc.stderr and "TaskGroup" not in proc.stderr, proc.stderr
