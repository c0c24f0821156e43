"""A tool that keeps its call open until a file appears: a turn stays live as long as a test needs.

``hold(marker, release)`` writes ``marker`` once the call is running, then waits (bounded) for
``release`` to exist.
"""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("gate")


@mcp.tool()
async def hold(marker: str, release: str) -> str:
    """Hold the call until the release file exists (at most two minutes)."""
    Path(marker).write_text("running")
    with anyio.move_on_after(120):
        while not Path(release).exists():
            await anyio.sleep(0.02)
        return "released"
    return "gave up waiting"


if __name__ == "__main__":
    anyio.run(mcp.run_stdio_async)
