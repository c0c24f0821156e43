"""A 2026-07-28 stdio server for the client's direct ``tools/call`` lane (tests/mcp/test_direct_calls.py).

``confirm`` asks its question the 2026-07-28 way: it answers ``InputRequiredResult`` until the call
comes back with the person's answer and the state it handed out. ``wait`` runs until cancelled and
records the cancellation it was sent. ``twice`` answers its call, then sends the same reply again
and a reply to an id nobody used: a client must drop both and keep serving.
"""

from __future__ import annotations

import anyio
import mcp_types as types
from _record import record
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

QUESTION = {"type": "object", "properties": {"sure": {"type": "boolean", "title": "Sure?"}}, "required": ["sure"]}
STATE = "round-1"


async def list_tools(ctx, params):
    return types.ListToolsResult(tools=[
        types.Tool(name=name, description=name, input_schema={"type": "object"})
        for name in ("confirm", "wait", "twice")
    ])


async def call_tool(ctx, params):
    record(params.name, id=ctx.request_id, state=params.request_state,
           responses=None if params.input_responses is None else {
               k: v.model_dump(mode="json", exclude_none=True) for k, v in params.input_responses.items()})
    if params.name == "confirm":
        answer = (params.input_responses or {}).get("sure")
        if answer is None or params.request_state != STATE:
            question = types.ElicitRequestFormParams(message="Really do it?", requested_schema=QUESTION)
            return types.InputRequiredResult(input_requests={"sure": types.ElicitRequest(params=question)},
                                             request_state=STATE)
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"{answer.action} {answer.content}")])
    if params.name == "wait":
        try:
            await anyio.sleep(60)
        except anyio.get_cancelled_exc_class():
            record("wait-cancelled", id=ctx.request_id)
            raise
    return types.CallToolResult(content=[types.TextContent(type="text", text="done")])


server = Server("asks-again", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
