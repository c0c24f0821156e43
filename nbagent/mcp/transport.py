"""The transport one server connection speaks over: a stdio child, or HTTP with its headers,
bearer token and OAuth sign-in (DESIGN §9). Opened inside the connection's owner task."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager, AsyncExitStack
from pathlib import Path
from typing import Any

from mcp.shared.message import SessionMessage

from nbagent import sandbox
from nbagent.config import Config, McpServerConfig
from nbagent.mcp.env import missing_env_vars, server_env
from nbagent.mcp.errors import McpStartupError
from nbagent.mcp.sandboxed import server_policy
from nbagent.mcp.stderr_log import StderrLog
from nbagent.mcp.stdio import ChildProcess, stdio_transport
from nbagent.protocol import EventMsg, McpLoginCompleted, McpLoginRequired, WarningEvent


def open_transport(
    name: str,
    cfg: McpServerConfig,
    stack: AsyncExitStack,
    *,
    stderr: StderrLog,
    child: list[ChildProcess],
    emit: Callable[[EventMsg], None],
    oauth_config: Config | None,
    sign_in: bool,
    waiting: Callable[[], AbstractContextManager[None]],
    read_hook: Callable[[SessionMessage | Exception], bool] | None = None,
) -> AbstractAsyncContextManager[Any]:
    """The transport for ``cfg``; what it must close later is pushed onto ``stack``. A stdio
    child is appended to ``child``, and its messages are shown to ``read_hook`` as they are read
    (``stdio_transport``); ``waiting`` pauses deadlines while a person signs in."""
    if cfg.transport == "stdio":
        assert cfg.command is not None
        missing = missing_env_vars(cfg)
        if missing:
            emit(WarningEvent(message=f"MCP server {name!r}: env_vars not set: {', '.join(missing)}"))
        cwd = str(Path(cfg.cwd).expanduser()) if cfg.cwd else None
        policy = server_policy(name, cfg, oauth_config)
        try:
            sandbox.require(policy, f"MCP server {name!r}")
        except sandbox.SandboxUnavailable as exc:
            raise McpStartupError(str(exc)) from None
        errlog = stderr.open()
        return stdio_transport(
            cfg.command, list(cfg.args), env=server_env(cfg), cwd=cwd, errlog=errlog, child=child,
            launcher=cfg.env_clear_parent, policy=policy, read_hook=read_hook,
        )  # fmt: skip
    headers = http_headers(name, cfg, emit)
    assert cfg.url is not None
    auth = _oauth(name, cfg, stack, emit=emit, oauth_config=oauth_config, sign_in=sign_in, waiting=waiting)
    if cfg.transport == "sse":
        from mcp.client.sse import sse_client

        # the SDK's own HTTP+SSE client (``type = "sse"``), with the same limits as streamable HTTP's
        return sse_client(cfg.url, headers=headers, timeout=30.0, sse_read_timeout=300.0, auth=auth)
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0), auth=auth)
    stack.push_async_callback(http.aclose)
    return streamable_http_client(cfg.url, http_client=http)


def _oauth(
    name: str,
    cfg: McpServerConfig,
    stack: AsyncExitStack,
    *,
    emit: Callable[[EventMsg], None],
    oauth_config: Config | None,
    sign_in: bool,
    waiting: Callable[[], AbstractContextManager[None]],
) -> Any:
    """The SDK's OAuth provider for a server without an Authorization of its own: a 401, at
    startup or mid-session, becomes a login whose link is an event, not a failure."""
    from nbagent.mcp import oauth

    if oauth_config is None or not oauth.uses_oauth(cfg):
        return None

    async def on_link(url: str) -> None:
        emit(McpLoginRequired(server=name, url=url))

    auth = oauth.ServerAuth(
        name, cfg, oauth_config, on_link=on_link if sign_in else None,
        on_completed=lambda: emit(McpLoginCompleted(server=name)), waiting=waiting,
    )  # fmt: skip
    stack.push_async_callback(auth.aclose)
    return auth.provider


def http_headers(name: str, cfg: McpServerConfig, emit: Callable[[EventMsg], None]) -> dict[str, str]:
    """Static headers, headers from environment variables, and the bearer token (never logged)."""
    headers = dict(cfg.http_headers)
    for header, var in cfg.env_http_headers.items():
        value = os.environ.get(var)
        if value is None:
            emit(WarningEvent(message=f"MCP server {name!r}: header {header} needs ${var}, not set"))
        else:
            headers[header] = value
    if cfg.bearer_token_env_var:
        token = os.environ.get(cfg.bearer_token_env_var)
        if not token:
            raise McpStartupError(f"MCP server {name!r}: bearer_token_env_var {cfg.bearer_token_env_var} is not set")
        headers["Authorization"] = f"Bearer {token}"
    return headers
