"""A real MCP server whose tool names are awkward on purpose, for the tool-identity walkthrough.

Every instance serves ``search``, so two instances under different server names show two
servers sending the same raw name. With ``--awkward`` it also serves names a model API cannot
take as they are: a dot (``read.file``) next to the name it sanitises to (``read_file``), two
names in Chinese (every code point becomes ``_``, so both sanitise to the same text) and a name
past the 64-character limit.

A low-level ``Server`` sends the names exactly as written (the high-level one derives them from
Python functions). Every call is appended as one JSON line to ``--record``: the raw name the
server received, which the walkthrough compares with the name the model called.

Run: ``python -m nbagent.examples.identity_server --name docs [--awkward] [--record FILE]``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from nbagent.mcp.validation import compiled, first_problem

LONG_NAME = "summarise_every_document_in_the_archive_by_quarter_and_by_department"
"""68 characters: past the limit before ``mcp__{server}__`` is even added."""
_QUERY = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
_PATH = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
_ORDER = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}

SHARED = [types.Tool(name="search", title="Search", description="Full-text search.", input_schema=_QUERY)]
AWKWARD = [
    types.Tool(name="read.file", title="Read a file (dotted name)", description="Read a file.", input_schema=_PATH),
    types.Tool(name="read_file", title="Read a file (plain name)", description="Read a file, too.", input_schema=_PATH),
    types.Tool(name="取消订单", title="Cancel an order", description="Cancel an order (取消订单).", input_schema=_ORDER),
    types.Tool(name="查询订单", title="Look up an order", description="Look up an order (查询订单).", input_schema=_ORDER),
    types.Tool(name=LONG_NAME, title="Summarise the archive", description="Summarise by quarter.", input_schema={"type": "object"}),
]


def recording_server(name: str, tools: list[types.Tool], record: Path | None, *, validate: bool = False) -> Server:
    """A low-level server listing ``tools`` as given; each call returns what it received and
    appends ``{server, tool, arguments}`` to ``record``. With ``validate`` a call whose arguments
    fail the tool's own ``inputSchema`` is refused (an error result naming the problem), as a
    server that enforces its schema does; the record then says why (``rejected``)."""
    schemas = {tool.name: tool.input_schema for tool in tools}

    async def list_tools(ctx: object, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments: dict[str, Any] = dict(params.arguments or {})
        problem = first_problem(compiled(schemas[params.name]), arguments) if validate and params.name in schemas else None
        if record is not None:
            line = {"server": name, "tool": params.name, "arguments": arguments}
            if problem is not None:
                line["rejected"] = problem
            with record.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(line, ensure_ascii=False) + "\n")
        if problem is not None:
            text = f"invalid arguments for {params.name!r} {problem}"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
        text = f"{name} ran {params.name!r} with {json.dumps(arguments, ensure_ascii=False)}"
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m nbagent.examples.identity_server", description=__doc__)
    parser.add_argument("--name", default="identity", help="the name this server reports")
    parser.add_argument("--awkward", action="store_true", help="also serve the awkward names")
    parser.add_argument("--record", help="JSONL file each call is appended to")
    args = parser.parse_args(argv)
    tools = SHARED + (AWKWARD if args.awkward else [])
    serve_stdio(recording_server(args.name, tools, Path(args.record) if args.record else None))


def serve_stdio(server: Server) -> None:
    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    main()
