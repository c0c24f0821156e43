"""Sleeps before serving (SLOW_START_SEC, default 1 s): startup-timeout and concurrency tests.

The SDK is imported only after the sleep, so sleeping servers cost no CPU while others start.
"""

from __future__ import annotations

import os
import sys
import time


def main() -> None:
    delay = float(os.environ.get("SLOW_START_SEC", "1"))
    print(f"slow_start: sleeping {delay} s before serving", file=sys.stderr, flush=True)
    time.sleep(delay)
    if os.environ.get("SLOW_START_FAIL"):
        print("slow_start: failing on purpose: " + os.environ["SLOW_START_FAIL"], file=sys.stderr, flush=True)
        sys.exit(2)

    import anyio
    from _record import record
    from mcp.server.mcpserver import MCPServer

    mcp = MCPServer("slow-start")

    @mcp.tool()
    def ping() -> str:
        """Answer pong."""
        record("ping")
        return "pong"

    anyio.run(mcp.run_stdio_async)


if __name__ == "__main__":
    main()
