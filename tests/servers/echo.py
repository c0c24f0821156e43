"""The trivial stdio server every contender of bench/mcp.py calls: one tool, ``echo``.

Its result has text and structured content with an ``outputSchema`` (what SDK servers send for
a plain return value), so each client does its whole per-call work on it.
"""

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("echo")


@mcp.tool()
def echo(text: str) -> str:
    """Return ``text``."""
    return text


if __name__ == "__main__":
    mcp.run()
