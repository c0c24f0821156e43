"""Failure modes: a tool that kills the server mid-call, one that raises, one that sleeps."""

from __future__ import annotations

import os

import anyio
from _record import record
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("crashy")


@mcp.tool()
def ok(text: str = "fine") -> str:
    """Answer at once."""
    record("ok", text=text)
    return text


@mcp.tool()
async def die(code: int = 3) -> str:
    """Exit the whole server process in the middle of the call."""
    record("die", code=code)
    import sys

    print(f"crashy: dying with code {code}", file=sys.stderr, flush=True)
    os._exit(code)


@mcp.tool()
def boom() -> str:
    """Raise inside the tool (the server stays up)."""
    record("boom")
    raise RuntimeError("boom went the tool")


@mcp.tool()
async def sleepy(seconds: float) -> str:
    """Sleep past any small timeout."""
    record("sleepy", seconds=seconds)
    await anyio.sleep(seconds)
    return "woke"


@mcp.tool()
def spawn_child() -> int:
    """Start a long-lived grandchild process (same process group) and return its pid."""
    import subprocess

    child = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    record("spawn_child", pid=child.pid)
    return child.pid


if __name__ == "__main__":
    anyio.run(mcp.run_stdio_async)
