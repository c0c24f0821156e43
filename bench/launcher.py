"""What the launcher (``env_clear_parent``, on by default) costs and what it hides.

1. Start-up: spawn-to-ready of a real Python MCP server (tests/servers/crashy.py), and a bare
   ``true`` spawned and reaped, each directly and under the launcher; median of N, and the ratio.
2. Exposure: run with ``OPENAI_API_KEY`` set to a canary, a server walks up its parent chain
   (tests/servers/spawner.py ``ancestors_env``) and reports, per ancestor, whether it can read
   its environment and whether the key is in it. Run as a non-root user to see what an ordinary
   user gets (root reads every process's environment).

Run: ``.venv/bin/python bench/launcher.py [--rounds 7]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nbagent.config import McpServerConfig
from nbagent.mcp.manager import McpConnectionManager
from nbagent.mcp.stdio import LAUNCHER
from nbagent.protocol import CallInfo

SERVERS = Path(__file__).resolve().parents[1] / "tests" / "servers"


def _cfg(script: str, launcher: bool) -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=[str(SERVERS / script)], env_clear_parent=launcher)


async def _ready(launcher: bool, logs: Path) -> float:
    manager = McpConnectionManager({"s": _cfg("crashy.py", launcher)}, lambda e: None, None, logs)  # type: ignore[arg-type]
    started = time.perf_counter()
    await manager.start()
    elapsed = time.perf_counter() - started
    assert manager.status()["s"].state == "ready"
    await manager.aclose()
    return elapsed


async def _bare(launcher: bool) -> float:
    argv = [sys.executable, "-I", "-S", LAUNCHER, str(os.getpid()), "true"] if launcher else ["true"]
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(*argv, env={"PATH": os.defpath}, start_new_session=True)
    await proc.wait()
    return time.perf_counter() - started


async def _startup(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, measure in (("bare `true`", _bare), ("MCP server ready", lambda on: _ready(on, Path(tmp)))):
            times: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(rounds):  # interleaved, so a busy machine weighs on both alike
                for on in (False, True):
                    times[on].append(await measure(on))
            direct, launched = statistics.median(times[False]), statistics.median(times[True])
            print(f"{name:18} direct {direct * 1000:7.1f} ms   launcher {launched * 1000:7.1f} ms   "
                  f"ratio {launched / direct:.2f}   (+{(launched - direct) * 1000:.1f} ms, median of {rounds})")


async def _probe(launcher: bool) -> list[dict[str, object]]:
    with tempfile.TemporaryDirectory() as tmp:
        manager = McpConnectionManager({"s": _cfg("spawner.py", launcher)}, lambda e: None, None, Path(tmp))  # type: ignore[arg-type]
        await manager.start()
        try:
            spec = next(s for s in manager.list_tools() if s.raw_name == "ancestors_env")
            result = await manager.call_tool(spec, {"name": "OPENAI_API_KEY"}, CallInfo(thread_id="t", turn_id="u", call_id="c"))
            assert isinstance(result.structured, dict), result
            return result.structured["result"]
        finally:
            await manager.aclose()


def _exposure() -> None:
    for launcher in (False, True):
        print(f"env_clear_parent = {str(launcher).lower()}:")
        for level, entry in enumerate(asyncio.run(_probe(launcher)), start=1):
            what = "holds the key" if entry["has"] else ("readable, no key" if entry["readable"] else "not readable")
            print(f"  ancestor {level}: {what:17} {str(entry['cmd'])[:70]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--exposure-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.exposure_only:
        _exposure()
        return 0
    print(f"user: uid {os.getuid()}" + (" (root: reads every process's environment)" if os.getuid() == 0 else ""))
    asyncio.run(_startup(args.rounds))
    # /proc/PID/environ shows a process's environment as it was at exec: hence a fresh process.
    env = {**os.environ, "OPENAI_API_KEY": "sk-canary-" + os.urandom(8).hex()}
    subprocess.run([sys.executable, __file__, "--exposure-only"], env=env, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
