"""Questions whose forms a careless or hostile server gets wrong (adapted from an audit's
``evil_elicit.py``): an optional field pre-filled with a default the person may clear, a default
that is not a valid answer, and bounds no value can meet. Each tool asks its one question and
records exactly what came back (needs the legacy protocol: the question is pushed mid-call)."""

from __future__ import annotations

import anyio
import mcp_types as types
from _record import record
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

SCHEMAS = {
    "ask_default": {"type": "object", "properties": {"note": {"type": "string", "title": "Note", "default": "DROP TABLE users"}}},
    "ask_email": {"type": "object", "properties": {"email": {"type": "string", "format": "email", "default": "not-an-email"}}},
    "ask_bounds": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 10, "maximum": 1}}, "required": ["n"]},
    "ask_rate": {"type": "object", "properties": {"rate": {"type": "number", "minimum": 1.5, "maximum": 0.5}}},
    "ask_lengths": {"type": "object", "properties": {"code": {"type": "string", "minLength": 8, "maxLength": 2}}},
    "ask_huge": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 2**60}}, "required": ["n"]},
}


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[
        types.Tool(name=n, description=n, input_schema={"type": "object"}, annotations=types.ToolAnnotations(readOnlyHint=True))
        for n in SCHEMAS
    ])


async def call_tool(ctx, params):
    answer = await ctx.session.elicit_form("Question " + params.name, SCHEMAS[params.name], related_request_id=ctx.request_id)
    record(params.name, action=answer.action, content=answer.content)
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"{answer.action} {answer.content}")])


server = Server("elicit-forms", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
