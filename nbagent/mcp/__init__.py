"""MCP client side: connection manager, per-server owner tasks, tool identity, the catalogue,
elicitation answers, call metadata, results, and the MCP <-> nbagent type conversions
(``convert.py``, shared with the server side). Tool schemas are ``nbagent.schema``.

Exports are lazy so importing a pure module (``nbagent.mcp.identity``) never loads the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nbagent.mcp.connection import McpConnection
    from nbagent.mcp.errors import McpStartupError
    from nbagent.mcp.manager import McpConnectionManager
    from nbagent.mcp.status import ServerStatus

__all__ = ["McpConnection", "McpConnectionManager", "McpStartupError", "ServerStatus"]

_WHERE = {
    "McpConnection": "nbagent.mcp.connection",
    "McpStartupError": "nbagent.mcp.errors",
    "McpConnectionManager": "nbagent.mcp.manager",
    "ServerStatus": "nbagent.mcp.status",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(name)
