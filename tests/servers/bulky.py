"""A server whose answers are large: one JSON-RPC line of many megabytes."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("bulky")


@mcp.tool()
def bulk(mb: int) -> str:
    """Return ``mb`` megabytes of text."""
    return "x" * (mb * 1024 * 1024)


if __name__ == "__main__":
    mcp.run()
