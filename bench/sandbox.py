"""What the OS sandbox costs at start: a stdio MCP server to ready, and a wrapped ``true``.

Side by side, the same server (tests/servers/echo.py) started by nbagent's MCP runtime with
``sandbox_mode = "danger-full-access"`` (the launcher only) and ``"workspace-write"`` (namespaces,
mounts and Landlock), interleaved so load drifts hit both alike; and ``true`` run directly,
under the launcher alone, and under the sandbox: the start overhead any wrapped command pays
(the future ``shell`` tool's). Targets: a server's start within +50 ms of the unsandboxed median,
a wrapped command's within 20 ms of the launcher alone.

Run: ``.venv/bin/python bench/sandbox.py [--starts 7] [--runs 30]``.
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

from nbagent import sandbox
from nbagent.config import Config, McpServerConfig
from nbagent.mcp.manager import McpConnectionManager
from nbagent.protocol import ElicitationRequested
from nbagent.protocol.elicitation import ElicitOutcome
from nbagent.sandbox import SandboxMode, SandboxWorkspaceWrite

ECHO = Path(__file__).resolve().parents[1] / "tests" / "servers" / "echo.py"
SERVER_TARGET_MS = 50.0
COMMAND_TARGET_MS = 20.0


async def _decline(event: ElicitationRequested) -> ElicitOutcome:
    return ElicitOutcome(action="decline")


async def server_start(mode: SandboxMode, work: Path) -> float:
    config = Config(sandbox_mode=mode, home=str(work / "home"), workspace=str(work))
    servers = {"echo": McpServerConfig(command=sys.executable, args=[str(ECHO)])}
    manager = McpConnectionManager(servers, lambda e: None, _decline, work / "logs", config)
    started = time.perf_counter()
    await manager.start()
    took = time.perf_counter() - started
    assert manager.list_tools(), "the server did not start"
    await manager.aclose()
    return took


def command_start(mode: SandboxMode | None, work: Path) -> float:
    argv, env = ["true"], {"PATH": os.environ["PATH"]}
    if mode is not None:
        policy = sandbox.resolve(mode, SandboxWorkspaceWrite(), workspace=work, home=work / "home")
        argv, env = sandbox.command(policy, argv, env)
    started = time.perf_counter()
    subprocess.run(argv, env=env, check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=7, help="server starts per mode")
    parser.add_argument("--runs", type=int, default=30, help="runs of true per way")
    args = parser.parse_args()
    if missing := sandbox.available():
        sys.exit(f"no sandbox on this system: {', '.join(missing)}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        modes: tuple[SandboxMode, SandboxMode] = ("danger-full-access", "workspace-write")
        starts: dict[str, list[float]] = {mode: [] for mode in modes}
        for _ in range(args.starts):
            for mode in modes:
                starts[mode].append(asyncio.run(server_start(mode, work)))
        ways: dict[str, SandboxMode | None] = {"direct": None, "launcher": "danger-full-access", "sandbox": "workspace-write"}
        runs: dict[str, list[float]] = {way: [] for way in ways}
        for _ in range(args.runs):
            for way, how in ways.items():
                runs[way].append(command_start(how, work))
    ms = {key: statistics.median(values) * 1000 for key, values in (starts | runs).items()}
    server_cost = ms["workspace-write"] - ms["danger-full-access"]
    command_cost = ms["sandbox"] - ms["launcher"]
    server_ok, command_ok = server_cost <= SERVER_TARGET_MS, command_cost <= COMMAND_TARGET_MS
    print(f"MCP server to ready (median of {args.starts}): unsandboxed {ms['danger-full-access']:.0f} ms, "
          f"sandboxed {ms['workspace-write']:.0f} ms: {server_cost:+.0f} ms "
          f"(target <= +{SERVER_TARGET_MS:.0f} ms) {'OK' if server_ok else 'MISSED'}")
    print(f"true (median of {args.runs}): direct {ms['direct']:.1f} ms, launcher {ms['launcher']:.1f} ms, "
          f"sandbox {ms['sandbox']:.1f} ms: {command_cost:+.1f} ms over the launcher "
          f"(target <= +{COMMAND_TARGET_MS:.0f} ms) {'OK' if command_ok else 'MISSED'}, "
          f"{ms['sandbox'] - ms['direct']:+.1f} ms over direct")
    if not (server_ok and command_ok):
        sys.exit(1)


if __name__ == "__main__":
    main()
