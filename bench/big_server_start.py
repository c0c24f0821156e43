"""A big stdio server, from start to its first successful call: plain JSON-RPC, the raw SDK and
nbagent side by side.

The server is tests/servers/many_tools.py listing N tools (5,000 by default) and one more,
``open_pull_request``, in pages of 100; it builds its list once, so it starts and lists in about
0.6 s and what is left is the client's. Each contender, in a fresh process of its own (its
imports done before the clock starts), starts the server, initializes, lists every tool and
calls ``open_pull_request`` once:

- ``plain``: a subprocess and JSON lines written and read by hand (``json.loads`` of the listing,
  nothing validated): the least any client can do, so mostly the server's own start and listing.
- ``sdk``: ``mcp.Client`` over stdio, ``list_tools()`` then ``call_tool``.
- ``nbagent``: ``async with Session(...)``, ``session.perform(ListMcpTools())`` (every server started
  and listed, the catalogue built), then ``perform(CallTool(...))`` (router, approval under
  full-auto, events, the rollout on disk).

The clock stops as the call returns (closing is not timed). Rounds are interleaved in a rotating
order, one contender at a time, so a neighbour's load falls on all alike; figures are medians of
wall time and of the client process's CPU. ``--base PYTHON`` adds nbagent as another tree has it.
Target: nbagent <= plain + 0.4 s (wall).

Measured (2 cores, 5,000 tools, two runs of 7 rounds side by side, load 2.8-5.3 then 1.8-2.5):
plain 0.66 / 0.71 s, sdk 1.17 / 1.19 s, nbagent 0.94 / 1.02 s (+0.27 / +0.31 s: met; client
CPU 0.23 / 0.26 s), the tree before result replies were read without the message union and
events without a scan when no secret is set +0.33 / +0.30 s (CPU 0.26 / 0.27 s).

Run: ``.venv/bin/python bench/big_server_start.py [--quick] [--tools 5000 --rounds 5]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
SERVER = HERE.parent / "tests" / "servers" / "many_tools.py"
TARGET_EXTRA_SEC = 0.4
TOOL, ARGUMENTS = "open_pull_request", {"id": "1"}

Contender = Callable[[list[str], Callable[[], None]], Awaitable[None]]
"""Starts the server, lists, calls, calls ``called()`` as the call returns, then cleans up."""


async def plain(server: list[str], called: Callable[[], None]) -> None:
    proc = await asyncio.create_subprocess_exec(*server, env=os.environ, stdin=subprocess.PIPE, stdout=subprocess.PIPE, limit=2**26)
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    async def request(rid: int, method: str, params: dict) -> dict:
        stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode() + b"\n")
        while True:
            message = json.loads(await stdout.readline())
            if message.get("id") == rid:
                return message["result"]

    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "plain", "version": "0"}}
    await request(1, "initialize", hello)
    stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    tools, cursor, rid = [], None, 2
    while True:
        page = await request(rid, "tools/list", {"cursor": cursor} if cursor else {})
        tools.extend(page["tools"])
        cursor, rid = page.get("nextCursor"), rid + 1
        if not cursor:
            break
    assert any(t["name"] == TOOL for t in tools)
    result = await request(rid, "tools/call", {"name": TOOL, "arguments": ARGUMENTS})
    called()
    assert not result.get("isError"), result
    stdin.close()
    await proc.wait()


async def sdk(server: list[str], called: Callable[[], None]) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=server[0], args=server[1:], env=dict(os.environ))
    async with Client(params, cache=None) as client:
        tools, cursor = [], None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            if not (cursor := page.next_cursor):
                break
        assert any(t.name == TOOL for t in tools)
        result = await client.call_tool(TOOL, ARGUMENTS)
        called()
        assert not result.is_error, result


async def nbagent(server: list[str], called: Callable[[], None]) -> None:
    from nbagent import Session, protocol
    from nbagent.config import Config, McpServerConfig

    # A workspace of its own beside the home, as a user has: the call's checkpoint snapshots it.
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as workspace:
        config = Config(home=home, approval_policy="full-auto")
        servers = {"big": McpServerConfig(command=server[0], args=server[1:], env={"MANY_TOOLS": os.environ["MANY_TOOLS"]})}
        async with Session(config=config, mcp_servers=servers, cwd=workspace) as session:
            if hasattr(protocol, "CallTool"):
                await session.perform(protocol.ListMcpTools())
                output = await session.perform(protocol.CallTool(name=f"mcp__big__{TOOL}", arguments=ARGUMENTS))
            else:  # a tree from before the session's ops (--base)
                await session.servers.ready()
                output = await session.call_tool(f"mcp__big__{TOOL}", ARGUMENTS)
            called()
            assert output.status == "completed", output


CONTENDERS: dict[str, Contender] = {"plain": plain, "sdk": sdk, "nbagent": nbagent, "nbagent-base": nbagent}


def worker(name: str, server: list[str], profile: str | None) -> None:
    """Import what the contender needs, say ready, then on ``go`` time one start to first call."""
    if name == "sdk":
        import mcp.client.stdio  # noqa: F401
    elif name.startswith("nbagent"):
        import nbagent.config  # noqa: F401
        from nbagent import Session  # noqa: F401
    print("ready", flush=True)
    sys.stdin.readline()
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
    figures: dict[str, float] = {}

    def called() -> None:
        figures.update(wall=time.perf_counter() - wall, cpu=time.process_time() - cpu)
        if profiler is not None:
            profiler.disable()

    cpu, wall = time.process_time(), time.perf_counter()
    asyncio.run(CONTENDERS[name](server, called))  # shutting down is not timed
    if profiler is not None:
        profiler.dump_stats(profile)
    print(json.dumps(figures), flush=True)


def run_one(name: str, python: str, tools: int, profile: str | None) -> dict[str, float]:
    cmd = [python, __file__, "--worker", name, "--tools", str(tools)]
    if profile:
        cmd += ["--profile", profile]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        raise RuntimeError(f"{name}: worker did not start")
    proc.stdin.write("go\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    proc.wait(60)
    if not line:
        raise RuntimeError(f"{name}: worker failed (exit code {proc.returncode})")
    return json.loads(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="3 rounds (under a minute)")
    parser.add_argument("--tools", type=int, default=5000, help="tools the server lists beside echo")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", nargs="*", choices=list(CONTENDERS), help="contenders to run (default: all)")
    parser.add_argument("--profile", metavar="FILE", help="cProfile (CPU time) each contender's last round into FILE.NAME")
    parser.add_argument("--base", metavar="PYTHON", help="also run nbagent as installed for PYTHON (e.g. an older tree's venv)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    server = [sys.executable, str(SERVER)]
    os.environ["MANY_TOOLS"] = str(args.tools)
    if args.worker:
        worker(args.worker, server, args.profile)
        return 0
    rounds = 3 if args.quick else args.rounds
    names = args.only or ["plain", "sdk", "nbagent"]
    if args.base and "nbagent-base" not in names:
        names.append("nbagent-base")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    walls: dict[str, list[float]] = {n: [] for n in names}
    cpus: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            profile = f"{args.profile}.{name}" if args.profile and r == rounds - 1 else None
            figures = run_one(name, args.base if name == "nbagent-base" else sys.executable, args.tools, profile)
            walls[name].append(figures["wall"])
            cpus[name].append(figures["cpu"])
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"one stdio server listing {args.tools + 1:,} tools, start to first call; {rounds} interleaved rounds, medians")
    wall = {n: statistics.median(v) for n, v in walls.items()}
    cpu = {n: statistics.median(v) for n, v in cpus.items()}
    print(f"{'contender':<10} {'wall s':>8} {'client cpu s':>13} {'wall - plain':>13}")
    for name in names:
        extra = f"{wall[name] - wall['plain']:>+13.2f}" if "plain" in wall and name != "plain" else ""
        print(f"{name:<10} {wall[name]:>8.2f} {cpu[name]:>13.2f} {extra}")
    if "plain" in wall and "nbagent" in wall:
        ok = wall["nbagent"] <= wall["plain"] + TARGET_EXTRA_SEC
        print(f"target nbagent <= plain + {TARGET_EXTRA_SEC:g} s (wall): {'OK' if ok else 'MISSED'}")
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
