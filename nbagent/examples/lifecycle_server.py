"""A real MCP server for the lifecycle walkthrough: one that refuses to start, crashes when asked,
and grows a tool mid-session.

``--refuse`` makes it print why on stderr and exit before the MCP handshake (a server with a
missing setting). ``crash`` exits the process in the middle of the call, as a server that dies
does. ``learn`` adds a ``forecast`` tool and sends ``tools/list_changed``, so a client that
listens re-lists and sees one tool more.

Run: ``python -m nbagent.examples.lifecycle_server [--refuse]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer(name="lifecycle", instructions="A weather station that can crash and learn.")


@server.tool()
def station() -> str:
    """Say which process answers: a restart shows a new pid."""
    return f"station up, pid {os.getpid()}"


@server.tool()
async def crash() -> str:
    """Exit the whole server process in the middle of this call."""
    print("lifecycle: sensor bus fault, exiting with code 3", file=sys.stderr, flush=True)
    os._exit(3)


def forecast(city: str) -> str:
    """Tomorrow's weather for a city."""
    return f"{city}: sunny, 21 C"


@server.tool()
async def learn(ctx: Context) -> str:
    """Add the ``forecast`` tool and tell the client its tool list changed."""
    if not any(tool.name == "forecast" for tool in await server.list_tools()):
        server.add_tool(forecast)
    for notify in (ctx.request_context.session.send_tool_list_changed, ctx.notify_tools_changed):
        try:
            await notify()
        except Exception:  # noqa: BLE001 - each protocol generation has only one of the two
            pass
    return "learned forecast"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m nbagent.examples.lifecycle_server", description=__doc__)
    parser.add_argument("--refuse", action="store_true", help="print why on stderr and exit before the handshake")
    if parser.parse_args(argv).refuse:
        print("lifecycle: STATION_KEY is not set; refusing to start", file=sys.stderr, flush=True)
        raise SystemExit(2)
    asyncio.run(server.run_stdio_async())


if __name__ == "__main__":
    main()
