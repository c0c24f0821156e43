"""The trivial stdio server every contender of bench/mcp.py calls: one tool, ``echo``.

Its result has text and structured content with an ``outputSchema`` (what SDK servers send for
a plain return value), so each client does its whole per-call work on it. ``echo.py N`` lists
``N`` more tools before it (``tool_0`` ...), for what a call costs on a server with many tools
(listed first, so a client that looks the tool up by scanning the list pays for all of them).
"""

import sys

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("echo")


def _extra(n: int) -> None:
    def tool(text: str) -> str:
        return text

    for i in range(n):
        mcp.add_tool(tool, name=f"tool_{i}", description=f"Return text (tool number {i}).")


def echo(text: str) -> str:
    """Return ``text``."""
    return text


if __name__ == "__main__":
    _extra(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    mcp.add_tool(echo)
    mcp.run()
