"""Reading large MCP results over stdio: nbagent's transport against the SDK's own client.

One JSON-RPC line of N MB (tests/servers/bulky.py); the read shares the kernel's event loop
with every other server, so its cost must stay linear in the size.

Run: ``.venv/bin/python bench/mcp_stdio.py [--mb 40]``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from nbagent.config import McpServerConfig
from nbagent.mcp.manager import McpConnectionManager
from nbagent.protocol import CallInfo

SERVER = Path(__file__).resolve().parents[1] / "tests" / "servers" / "bulky.py"


async def through_nbagent(mb: int) -> float:
    with tempfile.TemporaryDirectory() as logs:
        cfg = McpServerConfig(command=sys.executable, args=[str(SERVER)], tool_timeout_sec=600)
        manager = McpConnectionManager({"bulky": cfg}, on_event=lambda e: None, on_elicit=None, log_dir=Path(logs))
        await manager.start()
        try:
            spec = next(s for s in manager.list_tools() if s.raw_name == "bulk")
            started = time.perf_counter()
            result = await manager.call_tool(spec, {"mb": mb}, CallInfo(thread_id="t", turn_id="u", call_id="c"))
            assert not result.is_error, result
            return time.perf_counter() - started
        finally:
            await manager.aclose()


async def through_sdk(mb: int) -> float:
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
    async with Client(params, mode="legacy", cache=None) as client:
        started = time.perf_counter()
        result = await client.call_tool("bulk", {"mb": mb})
        assert not result.is_error
        return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=40)
    args = parser.parse_args(argv)
    ours = min(asyncio.run(through_nbagent(args.mb)) for _ in range(2))
    sdk = min(asyncio.run(through_sdk(args.mb)) for _ in range(2))
    print(f"{args.mb} MB result over stdio: nbagent {ours:.2f} s, SDK client {sdk:.2f} s (ratio {ours / sdk:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
