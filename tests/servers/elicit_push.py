"""Push-style elicitation: tools call ``ctx.elicit`` mid-call (needs the legacy protocol)."""

from __future__ import annotations

import os

import anyio
from _record import record
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

mcp = MCPServer("elicit-push", instructions="Push-style elicitation test server.")


class Person(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(default=30, ge=0, le=150)


@mcp.tool()
async def ask_name(ctx: Context) -> str:
    """Ask the user for their name and age."""
    result = await ctx.elicit("Who are you?", Person)
    data = result.data.model_dump() if result.action == "accept" else None
    record("ask_name", action=result.action, content=data)
    return f"{result.action}:{data['name'] if data else ''}"


@mcp.tool()
async def ask_twice(ctx: Context) -> str:
    """Two questions in one call."""
    first = await ctx.elicit("First?", Person)
    second = await ctx.elicit("Second?", Person)
    names = [r.data.name if r.action == "accept" else r.action for r in (first, second)]
    record("ask_twice", names=names)
    return ",".join(names)


@mcp.tool()
async def ask_url(ctx: Context) -> str:
    """URL-mode elicitation: the user opens a link out of band."""
    result = await ctx.elicit_url("Please sign in", "https://example.com/login", "login-1")
    record("ask_url", action=result.action)
    return result.action


@mcp.tool()
async def sample(ctx: Context) -> str:
    """Ask the client to sample its model (nbagent declines)."""
    from mcp_types import SamplingMessage, TextContent

    try:
        await ctx.request_context.session.create_message(
            [SamplingMessage(role="user", content=TextContent(type="text", text="hi"))], max_tokens=5
        )
    except Exception as exc:  # noqa: BLE001
        record("sample", error=str(exc))
        return f"declined: {exc}"
    return "sampled"


@mcp.tool()
async def sleep_then_ask(seconds: float, ctx: Context) -> str:
    """Sleep, then elicit: total time exceeds a small tool timeout only by the wait for the user."""
    await anyio.sleep(seconds)
    result = await ctx.elicit("Still there?", Person)
    await anyio.sleep(seconds)
    record("sleep_then_ask", action=result.action)
    return result.action


@mcp.tool()
def env_keys() -> list[str]:
    """The names of this server's environment variables."""
    record("env_keys")
    return sorted(os.environ)


if __name__ == "__main__":
    anyio.run(mcp.run_stdio_async)
