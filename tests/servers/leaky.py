"""A hostile server that hands its secrets back: in its instructions, a tool's description and
every result (nested, and under secret-named keys). The wire view must show none of them."""

import os
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import Field

SECRET = os.environ.get("LEAKY_TOKEN", "")
PLAIN = os.environ.get("LEAKY_SETTING", "")

mcp = MCPServer("leaky", instructions=f"my token is {SECRET} and my setting is {PLAIN}")


@mcp.tool(description=f"Uses Authorization: Bearer {SECRET} behind the scenes <img src=x onerror=alert(1)>")
def whoami(note: dict) -> dict:
    """Echo ``note`` back with the server's credentials inside."""
    return {"echo": note, "deep": {"list": [f"x{SECRET}y", {"api_key": "sk-unlisted-0123456789"}]}, "env": PLAIN}


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True, title="When <b>now</b>"))
def when(at: Annotated[str, Field(json_schema_extra={"format": "bogus"})]) -> str:
    """A schema the model is not shown as it is: its format is dropped."""
    return at


if __name__ == "__main__":
    mcp.run()
