"""Takes any JSON value and appends exactly what it received to $RECORD_FILE: the server's own
evidence of what it was sent. ``take`` says it is read-only, ``put`` that it is destructive."""

from __future__ import annotations

from typing import Any

from _record import record
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

mcp = MCPServer("takes_any")


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
def take(value: Any) -> str:
    """Keep ``value``."""
    record("take", value=value)
    return "taken"


@mcp.tool(annotations=ToolAnnotations(destructive_hint=True, read_only_hint=False))
def put(value: Any) -> str:
    """Store ``value`` (destructive: asks first)."""
    record("put", value=value)
    return "stored"


if __name__ == "__main__":
    mcp.run()
