"""Hostile ``outputSchema``s: a backtracking ``pattern`` the result triggers, a ``$ref`` to a URL
(``HOSTILE_REF_URL``), a result that does not conform, and one that omits its structured content."""

from __future__ import annotations

import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

BACKTRACK = "^(a+)+$"
"""Exponential in ``re`` on ``"a" * n + "!"``: a check that runs it never ends."""

OBJECT = {"type": "object"}
TOOLS = [
    types.Tool(name="backtrack", input_schema=OBJECT,
               output_schema={"type": "object", "properties": {"code": {"type": "string", "pattern": BACKTRACK}}}),
    types.Tool(name="remote_ref", input_schema=OBJECT,
               output_schema={"type": "object", "properties": {"v": {"$ref": os.environ.get("HOSTILE_REF_URL", "")}}}),
    types.Tool(name="lying", input_schema=OBJECT,
               output_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
    types.Tool(name="missing", input_schema=OBJECT, output_schema={"type": "object"}),
]
RESULTS: dict[str, dict[str, Any] | None] = {
    "backtrack": {"code": "a" * 64 + "!"},
    "remote_ref": {"v": 1},
    "lying": {"n": "not a number"},
    "missing": None,
}


async def list_tools(ctx: object, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)],
                                structured_content=RESULTS[params.name])


server = Server("hostile-output", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
