"""A small stdio MCP server for the chain tests: every execution is appended to $RECORD_FILE,
so a test can prove from the server's side whether a tool really ran."""

from __future__ import annotations

import asyncio
import json
import os

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations
from pydantic import BaseModel

server = MCPServer("recorder")


def _record(tool: str, **arguments: object) -> None:
    with open(os.environ["RECORD_FILE"], "a", encoding="utf-8") as f:
        f.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def write_note(text: str) -> str:
    """Write a note (destructive: needs approval)."""
    _record("write_note", text=text)
    return f"wrote {text!r}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def slow(seconds: float) -> str:
    """Sleep, then answer; records its start and its end."""
    _record("slow_start", seconds=seconds)
    await asyncio.sleep(seconds)
    _record("slow_end", seconds=seconds)
    return "slept"


class Name(BaseModel):
    name: str


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def ask_name(ctx: Context) -> str:
    """Ask the user for a name (a pushed elicitation: the inner connection speaks 2025-11-25)."""
    answer = await ctx.elicit("What is your name?", Name)
    _record("ask_name", action=answer.action, name=getattr(getattr(answer, "data", None), "name", None))
    return f"hello {answer.data.name}" if answer.action == "accept" else f"no name ({answer.action})"


if __name__ == "__main__":
    server.run()
