"""One MCP tool call, side by side: the raw SDK, nbagent and other agent runtimes' MCP clients.

Every contender calls ``echo`` on its own copy of one trivial stdio server (tests/servers/echo.py,
run by this interpreter) from its own process, so each client's CPU time is its own
(``time.process_time`` of that process) and peers may pin another ``mcp`` release. Rounds are
interleaved: each round runs every contender's batch of calls once, in a rotating order, so a
neighbour's load falls on all of them alike. Figures are medians over rounds, per call.

Contenders: ``sdk`` (``mcp.Client.call_tool``, the floor), ``nbagent`` (``Session.call_tool``:
router, approval under full-auto, the workspace's checkpoint, ``_meta``, result wrapping, events,
rollout on disk) and, when
``make bench-peers`` has made their venv, ``agents`` (OpenAI Agents SDK
``MCPServerStdio.call_tool``), ``pydantic-ai`` (``MCPToolset.direct_call_tool``) and
``fastmcp`` (``Client.call_tool``). ``--only ... nbagent-mcp`` adds the connection manager's call
alone (transport, ``_meta``, result wrapping), to show which layer the cost beyond the SDK's is in;
``nbagent-unsandboxed`` is ``nbagent`` with its server outside the OS sandbox (every other contender
runs it so), to show what the sandbox costs a call;
``--only ... floor`` adds the least a client can do (one JSON line out, one in, the result
validated as ``CallToolResult``), to show how much of any client's cost is the server and the pipes.

Run: ``.venv/bin/python bench/mcp.py [--quick] [--calls 200 --rounds 10] [--profile FILE]``.
Targets: nbagent / sdk <= 1.25 in client CPU and <= 1.15 in wall; nbagent <= every peer.
"""

from __future__ import annotations

import sys

if __name__ == "mcp":  # pragma: no cover - imported as ``mcp`` by a script run from this folder
    # Python puts a script's folder first on the path, so for every other bench here this file
    # is found before the ``mcp`` package: it hands the import over to the real one.
    import importlib
    import os.path

    _here, _path = os.path.dirname(os.path.abspath(__file__)), list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
    del sys.modules["mcp"]
    sys.modules["mcp"] = importlib.import_module("mcp")
    sys.path[:] = _path

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
SERVER = HERE.parent / "tests" / "servers" / "echo.py"
PEERS_PYTHON = HERE.parent / ".venv" / "peers" / "bin" / "python"
OURS = ("sdk", "nbagent")
EXTRA = ("nbagent-unsandboxed", "nbagent-mcp", "floor")
"""Run only when named in ``--only``."""
PEERS = ("agents", "pydantic-ai", "fastmcp")
WARMUP = 50
TARGET_CPU, TARGET_WALL = 1.25, 1.15
"""nbagent / sdk per call, with the call's two turn records on disk before it returns."""
TEXT = "hello"

Call = Callable[[], Awaitable[object]]


# -- the contenders (each runs in its own worker process; imports stay inside) ----------------


async def sdk(server: list[str], run: Callable[[Call], Awaitable[None]]) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async with Client(StdioServerParameters(command=server[0], args=server[1:]), cache=None) as client:
        await client.list_tools()
        await run(lambda: client.call_tool("echo", {"text": TEXT}))


async def nbagent(server: list[str], run: Callable[[Call], Awaitable[None]], sandbox: str | None = None) -> None:
    from nbagent import Session
    from nbagent.config import Config, McpServerConfig
    from nbagent.protocol import CallTool, ListMcpTools

    # A workspace of its own beside the home, as a user has: a call's checkpoint snapshots it.
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as workspace:
        config = Config(home=home, approval_policy="full-auto")
        servers = {"echo": McpServerConfig(command=server[0], args=server[1:], sandbox_mode=sandbox)}
        async with Session(config=config, mcp_servers=servers, cwd=workspace) as session:
            await session.perform(ListMcpTools())

            async def call() -> object:
                output = await session.perform(CallTool(name="mcp__echo__echo", arguments={"text": TEXT}))
                assert output.status == "completed", output
                return output

            await run(call)


async def nbagent_unsandboxed(server: list[str], run: Callable[[Call], Awaitable[None]]) -> None:
    """``nbagent`` with the server outside the OS sandbox, as every other contender runs it: the
    client's cost alone, without what a sandboxed server spends on each call itself."""
    await nbagent(server, run, sandbox="danger-full-access")


async def nbagent_mcp(server: list[str], run: Callable[[Call], Awaitable[None]]) -> None:
    """The layer under ``Session.call_tool``: the connection manager's call (transport, ``_meta``,
    result wrapping), without router, approval, events or rollout; shows where the rest goes."""
    from nbagent.config import McpServerConfig
    from nbagent.mcp.manager import McpConnectionManager
    from nbagent.protocol import CallInfo, new_id

    with tempfile.TemporaryDirectory() as logs:
        cfg = McpServerConfig(command=server[0], args=server[1:])
        manager = McpConnectionManager({"echo": cfg}, on_event=lambda e: None, on_elicit=None, log_dir=Path(logs))
        await manager.start()
        try:
            spec = next(s for s in manager.list_tools() if s.raw_name == "echo")
            thread = new_id("thread")

            async def call() -> object:
                info = CallInfo(thread_id=thread, turn_id=new_id("turn"), call_id=new_id("call"))
                result = await manager.call_tool(spec, {"text": TEXT}, info)
                assert not result.is_error, result
                return result

            await run(call)
        finally:
            await manager.aclose()


async def floor(server: list[str], run: Callable[[Call], Awaitable[None]]) -> None:
    """A bare newline JSON-RPC client: no cancellation, progress, timeouts or server requests, so
    not a client anyone should use; what is left of a call when everything a client adds is gone."""
    from itertools import count

    from mcp.types import CallToolResult

    proc = await asyncio.create_subprocess_exec(*server, stdin=subprocess.PIPE, stdout=subprocess.PIPE, limit=2**24)
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    waiting: dict[int, asyncio.Future[dict]] = {}

    async def read() -> None:
        while line := await stdout.readline():
            message = json.loads(line)
            if (future := waiting.pop(message.get("id"), None)) is not None:
                future.set_result(message)

    async def request(method: str, params: dict) -> dict:
        rid = next(ids)
        waiting[rid] = future = asyncio.get_running_loop().create_future()
        stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode() + b"\n")
        return (await future)["result"]

    ids = count(1)
    reader = asyncio.create_task(read())
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "floor", "version": "0"}}
    await request("initialize", hello)
    stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')

    async def call() -> CallToolResult:
        return CallToolResult.model_validate(await request("tools/call", {"name": "echo", "arguments": {"text": TEXT}}))

    try:
        await run(call)
    finally:
        stdin.close()
        await proc.wait()
        reader.cancel()


async def agents(server: list[str], run: Callable[[Call], Awaitable[None]]) -> None:
    from agents.mcp import MCPServerStdio

    async with MCPServerStdio(params={"command": server[0], "args": server[1:]}, cache_tools_list=True) as mcp:
        await mcp.list_tools()
        await run(lambda: mcp.call_tool("echo", {"text": TEXT}))


async def pydantic_ai(server: list[str], run: Callable[[Call], Awaitable[None]]) -> None:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport
    from pydantic_ai.mcp import MCPToolset

    async with MCPToolset(Client(StdioTransport(command=server[0], args=server[1:]))) as mcp:
        await mcp.list_tools()
        await run(lambda: mcp.direct_call_tool("echo", {"text": TEXT}))


async def fastmcp(server: list[str], run: Callable[[Call], Awaitable[None]]) -> None:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    async with Client(StdioTransport(command=server[0], args=server[1:])) as client:
        await client.list_tools()
        await run(lambda: client.call_tool("echo", {"text": TEXT}))


CONTENDERS = {
    "sdk": sdk, "nbagent": nbagent, "nbagent-base": nbagent, "nbagent-unsandboxed": nbagent_unsandboxed,
    "nbagent-mcp": nbagent_mcp, "floor": floor,
    "agents": agents, "pydantic-ai": pydantic_ai, "fastmcp": fastmcp,
}


def worker(name: str, server: list[str], profile: str | None) -> None:
    """Connect, warm up, then answer each ``N`` on stdin with the wall and CPU of N calls."""

    async def run(call: Call) -> None:
        for _ in range(WARMUP):
            await call()
        print("ready", flush=True)
        profiler = None
        if profile:
            import cProfile

            profiler = cProfile.Profile(time.process_time)  # CPU: a busy machine's waits are not ours
        while True:
            line = sys.stdin.readline()  # between batches only: the loop has nothing else to do
            if not line.strip():
                break
            n = int(line)
            if profiler is not None:
                profiler.enable()
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(n):
                await call()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if profiler is not None:
                profiler.disable()
            print(json.dumps({"wall": wall, "cpu": cpu, "n": n}), flush=True)
        if profiler is not None:
            profiler.dump_stats(profile)

    asyncio.run(CONTENDERS[name](server, run))


# -- the parent: start every worker, interleave rounds, print medians and ratios ---------------


class Worker:
    def __init__(self, name: str, python: str, profile: str | None, tools: int) -> None:
        self.name = name
        cmd = [python, __file__, "--worker", name, "--server", sys.executable, str(SERVER), str(tools)]
        if profile:
            cmd += ["--profile", profile]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.walls: list[float] = []
        self.cpus: list[float] = []

    def wait_ready(self) -> bool:
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        return line.strip() == "ready"

    def batch(self, n: int) -> None:
        self.proc.stdin.write(f"{n}\n")  # type: ignore[union-attr]
        self.proc.stdin.flush()  # type: ignore[union-attr]
        figures = json.loads(self.proc.stdout.readline())  # type: ignore[union-attr]
        self.walls.append(figures["wall"] / n * 1e6)
        self.cpus.append(figures["cpu"] / n * 1e6)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.write("\n")  # type: ignore[union-attr]
            self.proc.stdin.flush()  # type: ignore[union-attr]
            self.proc.wait(60)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds (well under a minute)")
    parser.add_argument("--calls", type=int, default=200, help="calls per contender per round")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--only", nargs="*", help="contenders to run (default: all available)")
    parser.add_argument("--profile", metavar="FILE", help="cProfile each worker's timed calls (CPU time) into FILE.NAME")
    parser.add_argument("--base", metavar="PYTHON", help="also run nbagent as installed for PYTHON (e.g. an older tree's venv)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--tools", type=int, default=0, metavar="N",
                        help="the server lists N more tools beside echo (what a call costs on a big server)")
    parser.add_argument("--server", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.server, args.profile)
        return 0
    calls, rounds = (100, 5) if args.quick else (args.calls, args.rounds)
    names = list(OURS) + (["nbagent-base"] if args.base else []) + (list(PEERS) if PEERS_PYTHON.exists() else [])
    if args.only:
        names = [n for n in names if n in args.only] + [n for n in EXTRA if n in args.only]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if not PEERS_PYTHON.exists():
        print(f"peers skipped: no {PEERS_PYTHON.relative_to(HERE.parent)} (make bench-peers makes it)")
    workers = []
    for name in names:
        python = sys.executable if name in OURS + EXTRA else args.base if name == "nbagent-base" else str(PEERS_PYTHON)
        profile = f"{args.profile}.{name}" if args.profile else None
        workers.append(Worker(name, python, profile, args.tools))
    try:
        live = [w for w in workers if w.wait_ready() or print(f"{w.name}: did not start; left out")]
        if not live:
            return 1
        for r in range(rounds):
            shift = r % len(live)
            for w in live[shift:] + live[:shift]:
                w.batch(calls)
    finally:
        for w in workers:
            w.close()
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    listed = f" listing {args.tools + 1:,} tools" if args.tools else ""
    print(f"{calls} calls x {rounds} interleaved rounds per contender, one stdio echo server{listed} each; median per call")
    wall = {w.name: statistics.median(w.walls) for w in live}
    cpu = {w.name: statistics.median(w.cpus) for w in live}
    print(f"{'contender':<12} {'wall us':>9} {'cpu us':>9} {'nbagent/x wall':>15} {'nbagent/x cpu':>14}")
    for name in wall:
        ratios = "" if name == "nbagent" or "nbagent" not in wall else (
            f"{wall['nbagent'] / wall[name]:>15.2f} {cpu['nbagent'] / cpu[name]:>14.2f}"
        )
        print(f"{name:<12} {wall[name]:>9.0f} {cpu[name]:>9.0f} {ratios}")
    if "nbagent" in wall and "sdk" in wall:
        ok = wall["nbagent"] / wall["sdk"] <= TARGET_WALL and cpu["nbagent"] / cpu["sdk"] <= TARGET_CPU
        peers = [n for n in wall if n in PEERS]
        beats = all(wall["nbagent"] <= wall[n] and cpu["nbagent"] <= cpu[n] for n in peers)
        print(f"target nbagent/sdk <= {TARGET_CPU} cpu, <= {TARGET_WALL} wall: {'OK' if ok else 'MISSED'}")
        if peers:
            print(f"target nbagent <= every peer (wall and cpu): {'OK' if beats else 'MISSED'}")
        return 0 if ok and beats else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
