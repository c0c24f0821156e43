"""A real MCP server for the metadata-and-results walkthrough: it records what it received and
what it sent.

``whoami`` reports progress against the call's ``progressToken`` and answers with the ``_meta``
the call carried. The other tools each send one kind of result, built explicitly as a
``CallToolResult`` so the record holds exactly what went over the wire: text and an image
(``chart``), an embedded resource (``readme``), structured content with an ``outputSchema``
(``stats``), a tool error (``fail``) and a long text (``dump``).

Every call is appended as one JSON line to ``--record``: the ``_meta`` received and the result
sent, to set beside what the model read.

Run: ``python -m nbagent.examples.meta_server --record FILE``.
"""

from __future__ import annotations

import base64
import json
import zlib

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

from nbagent.examples.recording import Record, serve

_record = Record()

server = MCPServer(name="meta", instructions="Build statistics. Every tool is read-only.")


def _png(width: int, height: int) -> bytes:
    """A small grey PNG, made here so the server needs no image library."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")
    rows = b"".join(b"\x00" + bytes([128]) * width for _ in range(height))
    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([8, 0, 0, 0, 0])
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def _meta(ctx: Context) -> dict[str, object]:
    """The call's ``_meta`` under its wire names: the SDK hands a tool the progress token as
    ``progress_token``; it travelled as ``progressToken``."""
    meta = dict(ctx.request_context.meta or {})
    return {("progressToken" if key == "progress_token" else key): value for key, value in meta.items()}


def _send(ctx: Context, tool: str, result: types.CallToolResult) -> types.CallToolResult:
    """Record the ``_meta`` this call carried and the result about to be sent; send it."""
    _record(tool, meta=_meta(ctx), sent=result.model_dump(mode="json", by_alias=True, exclude_none=True))
    return result


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


@server.tool()
async def whoami(ctx: Context) -> types.CallToolResult:
    """Report progress, then answer with the ``_meta`` this call carried."""
    for step in (1, 2):
        await ctx.report_progress(step, 2, f"looking ({step}/2)")
    return _send(ctx, "whoami", types.CallToolResult(content=[_text(json.dumps(_meta(ctx), sort_keys=True))]))


@server.tool()
def chart(ctx: Context) -> types.CallToolResult:
    """Build times as a chart: a caption and a PNG."""
    image = types.ImageContent(type="image", data=base64.b64encode(_png(24, 12)).decode(), mime_type="image/png")
    return _send(ctx, "chart", types.CallToolResult(content=[_text("build times, last 24 runs"), image]))


@server.tool()
def readme(ctx: Context) -> types.CallToolResult:
    """The build's README, as an embedded resource."""
    resource = types.TextResourceContents(uri="file:///build/README.md", mime_type="text/markdown",
                                          text="# build\n\nRun `make test`.")
    embedded = types.EmbeddedResource(type="resource", resource=resource)
    return _send(ctx, "readme", types.CallToolResult(content=[embedded]))


class Stats(BaseModel):
    """Test counts of the last run."""

    passed: int
    failed: int
    slowest: str


@server.tool()
def stats(ctx: Context) -> Stats:
    """Test counts of the last run, as structured content (and the same JSON as text)."""
    data = {"passed": 41, "failed": 1, "slowest": "test_cancel_order"}
    result = types.CallToolResult(content=[_text(json.dumps(data))], structured_content=data)
    return _send(ctx, "stats", result)  # type: ignore[return-value]  # annotated Stats for its output schema; the result is sent as it is


@server.tool()
def fail(ctx: Context) -> types.CallToolResult:
    """Read the build cache (it is locked)."""
    return _send(ctx, "fail", types.CallToolResult(content=[_text("the build cache is locked by pid 4242")], is_error=True))


@server.tool()
def dump(lines: int, ctx: Context) -> types.CallToolResult:
    """The full build log: ``lines`` lines of it."""
    log = "\n".join(f"{n:05d} compiling module_{n}.py ... ok" for n in range(1, lines + 1))
    return _send(ctx, "dump", types.CallToolResult(content=[_text(log)]))


def main(argv: list[str] | None = None) -> None:
    serve(server, _record, argv, prog="python -m nbagent.examples.meta_server", description=__doc__)


if __name__ == "__main__":
    main()


