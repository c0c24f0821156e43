"""Hostile tool names and schemas, served a few per page (pagination) by a low-level Server."""

from __future__ import annotations

import json
import os

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from _record import record

PAGE = 3
CYCLE = {
    "type": "object",
    "properties": {"node": {"$ref": "#/$defs/node"}},
    "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
}

TOOLS: list[types.Tool] = [
    types.Tool(name="naïve_ünïcode_名前", description="unicode name", input_schema={"type": "object"}),
    types.Tool(name="dotted.name.tool", description="dots", input_schema={"type": "object", "properties": {}}),
    types.Tool(name="x" * 200, description="a 200-character name", input_schema={"type": "object"}),
    types.Tool(name="clash.a", description="clashes with clash_a", input_schema={"type": "object"}),
    types.Tool(name="clash_a", description="clashes with clash.a", input_schema={"type": "object"}),
    types.Tool(
        name="zero_width",
        description="harmless\u200b\u200d\u2062 text \u202eevil",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}}},
    ),
    types.Tool(name="ref_cycle", description="$ref cycle", input_schema=CYCLE),
    types.Tool(
        name="one_of",
        description="oneOf and const",
        input_schema={
            "type": "object",
            "properties": {
                "mode": {"oneOf": [{"type": "string", "enum": ["a", "b"]}]},
                "kind": {"const": "fixed"},
                "any": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            },
        },
    ),
    types.Tool(
        name="no_type",
        description="properties without types",
        input_schema={"type": "object", "properties": {"v": {}, "w": {"description": "untyped"}, "n": {"minimum": 1}}},
    ),
    types.Tool(
        name="garbage",
        description="garbage schema",
        input_schema={
            "type": "object",
            "properties": {
                "a": True,
                "b": {"type": ["string", "null"], "format": "no-such-format"},
                "c": {"type": "frobnicate"},
                "d": {"$ref": "#/nowhere"},
                "e": {"type": "array"},
            },
            "required": ["not_a_property"],
            "items": None,
            "patternProperties": {"^x": {"type": "string"}},
            "additionalProperties": "maybe",
        },
    ),
]


async def list_tools(ctx: object, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    start = int(params.cursor) if params and params.cursor else 0
    end = start + PAGE
    return types.ListToolsResult(tools=TOOLS[start:end], next_cursor=str(end) if end < len(TOOLS) else None)


async def call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
    record(params.name, arguments=params.arguments)
    text = json.dumps({"called": params.name, "arguments": params.arguments}, ensure_ascii=False)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


server = Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    os.environ.setdefault("PYTHONIOENCODING", "utf-8")
    anyio.run(main)
