"""Streamable HTTP on 127.0.0.1:PORT, requiring ``Authorization: Bearer $HTTP_TOKEN``.

Usage: python http_server.py PORT [sse]   (``sse``: the older HTTP+SSE transport at /sse)
"""

from __future__ import annotations

import os
import sys

import uvicorn
from _record import record
from mcp.server.mcpserver import Context, MCPServer

mcp = MCPServer("http-test", instructions="HTTP test server.")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    record("add", a=a, b=b)
    return a + b


@mcp.tool()
async def work(steps: int, ctx: Context) -> str:
    """Progress over HTTP."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps)
    record("work", steps=steps)
    return "done"


def bearer_guard(app, token: str):
    """Pure ASGI middleware: 401 unless the bearer token matches (health check is open)."""

    async def guarded(scope, receive, send):
        if scope["type"] == "http" and scope["path"] != "/health":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization", b"").decode() != f"Bearer {token}":
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        if scope["type"] == "http" and scope["path"] == "/health":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})
            return
        await app(scope, receive, send)

    return guarded


if __name__ == "__main__":
    port = int(sys.argv[1])
    inner = mcp.sse_app() if sys.argv[2:] == ["sse"] else mcp.streamable_http_app()
    app = bearer_guard(inner, os.environ["HTTP_TOKEN"])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
