"""OAuth 2.1 for HTTP MCP servers (the MCP authorization spec), on the SDK's client provider.

A connection to an HTTP server that has no ``Authorization`` of its own configured carries a
:class:`ServerAuth`: the first 401 starts discovery, registration and a PKCE login whose link
reaches the person as ``McpLoginRequired``; tokens are kept (0600 file or OS keyring) and
refreshed, and a 401 mid-session asks for a new login instead of failing the server.
``login`` / ``logout`` are what ``nbagent mcp login|logout`` call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from nbagent.config import Config, ConfigError, McpServerConfig
from nbagent.mcp.errors import innermost
from nbagent.mcp.oauth.provider import ServerAuth
from nbagent.mcp.oauth.storage import backend_for

__all__ = ["ServerAuth", "login", "logout", "uses_oauth"]


def uses_oauth(server: McpServerConfig) -> bool:
    """HTTP servers log in with OAuth unless the config already gives them an Authorization."""
    if server.transport not in ("http", "sse") or server.bearer_token_env_var:
        return False
    named = {h.lower() for h in (*server.http_headers, *server.env_http_headers)}
    return "authorization" not in named


async def login(name: str, server: McpServerConfig, config: Config, *, on_link: Callable[[str], Awaitable[None]]) -> None:
    """Log in to ``name`` now, whatever tokens are stored: ``on_link`` gets the authorization link
    to show the person; returns once tokens are stored. Raises ``ConfigError`` for a server that
    does not use OAuth, and the SDK's ``OAuthFlowError``/``OAuthTokenError`` when the login fails."""
    if not uses_oauth(server):
        raise ConfigError(f"MCP server {name!r} does not log in with OAuth (it is not HTTP, or has its own Authorization)")
    assert server.url is not None
    auth = ServerAuth(name, server, config, on_link=on_link, fresh=True)
    try:
        async with httpx2.AsyncClient(auth=auth.provider, timeout=httpx2.Timeout(30.0, read=300.0)) as http:
            if server.transport == "sse":
                transport = sse_client(server.url, auth=auth.provider)
            else:
                transport = streamable_http_client(server.url, http_client=http)
            async with Client(transport):
                pass
    except BaseExceptionGroup as group:  # the SDK's task groups wrap the reason: raise the reason
        raise innermost(group) from None
    finally:
        await auth.aclose()


def logout(name: str, server: McpServerConfig, config: Config) -> bool:
    """Forget the tokens and registration stored for ``name``; ``False`` when there were none."""
    return backend_for(name, server.url or "", config).delete()
