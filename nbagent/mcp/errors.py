"""How a server connection fails, said in one line naming the server (DESIGN §9)."""

from __future__ import annotations

import mcp_types as types
from mcp.shared.exceptions import MCPError

from nbagent.config import McpServerConfig


def innermost(exc: BaseException) -> BaseException:
    """The one exception a task group wrapped (the SDK's transports nest them), else ``exc``."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def describe_error(exc: BaseException) -> str:
    """``ConnectError: refused``: the exception that failed, named, for a one-line message."""
    exc = innermost(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class McpStartupError(RuntimeError):
    """A server did not become ready; carries the tail of its stderr log."""

    def __init__(self, message: str, stderr_tail: str | None = None) -> None:
        super().__init__(message)
        self.stderr_tail = stderr_tail


class McpUnavailable(RuntimeError):
    """The server is not connected (failed, crashed, stopped)."""


def why_ended(name: str, cfg: McpServerConfig, exc: BaseException, returncode: int | None) -> str:
    """Why a connection's owner task ended (startup failed or the server died), in one line
    naming the server; not yet redacted. ``returncode`` is the stdio child's, if it exited."""
    exc = innermost(exc)
    if isinstance(exc, McpStartupError):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return f"MCP server {name!r}: command not found: {cfg.as_written(cfg.command)!r}"
    if isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
        how = f" (exit code {returncode})" if returncode is not None else ""
        return f"MCP server {name!r} closed the connection during startup{how}"
    return f"MCP server {name!r} failed to start: {describe_error(exc)}"
