"""Startup: how soon a kernel session, the first tool call, ``nbagent mcp-server`` and many MCP
servers are ready, each beside the floor it cannot beat, measured interleaved in one run.

- kernel: ``%load_ext nbagent`` to an open session, in a fresh kernel, against a fresh kernel's
  ``import openai, mcp, ipywidgets`` (target ratio <= 1.3), each one cell timed inside the
  kernel, with the kernel process's CPU beside it; then the first tool call against the median of
  the next ones (target <= 50 ms more).
- ``nbagent mcp-server``: process start to the ``initialize`` answer, against
  ``python -c "import openai, mcp"`` (target ratio <= 1.3).
- many servers: 10 Python and 10 Node (``@modelcontextprotocol/server-memory``) servers started by
  one connection manager, against one server alone plus the CPU-seconds of the ten divided by
  the cores (target ratio <= 1.10).
- ``-X importtime``: the modules that cost most on the way to a ready session.

Run: ``.venv/bin/python bench/startup.py [--quick]``.
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
from collections import defaultdict
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from nbagent.config import McpServerConfig  # noqa: E402
from nbagent.config.trust import ENV as TRUST_ENV  # noqa: E402
from nbagent.mcp.manager import McpConnectionManager  # noqa: E402
from tests.notebook.harness import Kernel, demo_config, script  # noqa: E402

MEMORY = REPO / "tests" / "node" / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
DEMO = ["-m", "nbagent.examples.demo_server"]
FLOOR_KERNEL = "import openai, mcp, ipywidgets"
READY = "from nbagent.notebook.extension import get_agent as _bench_agent\n_bench_s = await _bench_agent().ready()"
CALLS = """
import json as _bj, time as _bt
from nbagent.protocol import CallTool, ListMcpTools
await _bench_s.perform(ListMcpTools())
_bench_d = []
for _bench_i in range({n}):
    _bench_t = _bt.perf_counter()
    _bench_o = await _bench_s.perform(CallTool(name="mcp__demo__list_notes", arguments={{}}, policy="full-auto"))
    _bench_d.append(_bt.perf_counter() - _bench_t)
    assert not _bench_o.is_error, _bench_o.output
print("@@" + _bj.dumps(_bench_d))
"""
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}) + "\n"
SESSION_MODULES = "nbagent.notebook.extension, nbagent.core.session, nbagent.notebook.render, nbagent.notebook.text_render"


# -- kernel ------------------------------------------------------------------------------------


def _kernel(work: Path) -> Kernel:
    return Kernel(work, env={"NBAGENT_HOME": str(work / "home")})


def _timed(kernel: Kernel, cell: str) -> tuple[float, float]:
    """(wall s inside the kernel, the kernel process's CPU s) to run ``cell``.

    The wall time is taken in the kernel, from the cell's first line to its last: what reaches
    the client after that (the reply, widget messages, the harness's polling) is the same for
    any cell and would only blur the ratio."""
    process = psutil.Process(kernel.km.provisioner.pid)  # type: ignore[union-attr]
    cpu = process.cpu_times()
    timed = f"import time as _bw\n_bw0 = _bw.perf_counter()\n{cell}\nprint('@@wall', _bw.perf_counter() - _bw0)"
    _, out = kernel.run(timed, timeout=180)
    after = process.cpu_times()
    wall = float(out.rsplit("@@wall", 1)[1].split()[0])  # after any widget's text/plain
    return wall, (after.user + after.system) - (cpu.user + cpu.system)


def _in_fresh_kernel(work: Path, cell: str) -> tuple[float, float]:
    kernel = _kernel(work)
    try:
        return _timed(kernel, cell)
    finally:
        kernel.close()


def kernel_round(bare: Path, demo: Path, calls: int) -> tuple[tuple[float, float], tuple[float, float], list[float]]:
    """(floor wall/CPU, ready wall/CPU, call durations) from three fresh kernels.

    Readiness is measured with no MCP server configured: servers start in the background and
    are not part of it, and their own CPU would be counted against the kernel on a busy machine.
    The calls go to the demo server (its tools declare an ``outputSchema``)."""
    floor = _in_fresh_kernel(bare, FLOOR_KERNEL)
    ready = _in_fresh_kernel(bare, "%load_ext nbagent\n" + READY)  # one cell, as the floor is
    kernel = _kernel(demo)
    try:
        kernel.run("%load_ext nbagent", timeout=180)
        kernel.run(READY, timeout=180)
        _, out = kernel.run(CALLS.format(n=calls), timeout=180)
        durations = json.loads(next(ln[2:] for ln in out.splitlines() if ln.startswith("@@")))
    finally:
        kernel.close()
    return floor, ready, durations


# -- nbagent mcp-server ------------------------------------------------------------------------


def _nbagent() -> list[str]:
    script_path = Path(sys.executable).with_name("nbagent")
    return [str(script_path)] if script_path.exists() else [sys.executable, "-m", "nbagent.cli"]


def server_initialize(home: Path) -> float:
    """Seconds from starting ``nbagent mcp-server`` to its answer to ``initialize``."""
    env = {**os.environ, "NBAGENT_HOME": str(home)}
    started = time.perf_counter()
    proc = subprocess.Popen([*_nbagent(), "mcp-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, cwd=home)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(INITIALIZE.encode())
        proc.stdin.flush()
        line = proc.stdout.readline()
        elapsed = time.perf_counter() - started
        assert b'"result"' in line, line[:300]
        return elapsed
    finally:
        proc.kill()
        proc.wait()


def server_floor() -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import openai, mcp"], check=True)
    return time.perf_counter() - started


# -- many servers ------------------------------------------------------------------------------


def _configs(python: int, node: int, work: Path) -> dict[str, McpServerConfig]:
    cfgs = {f"py{i}": McpServerConfig(command=sys.executable, args=[*DEMO, "--dir", str(work / f"notes{i}")],
                                      env={"PYTHONPATH": str(REPO)}, startup_timeout_sec=120) for i in range(python)}
    for i in range(node):
        cfgs[f"node{i}"] = McpServerConfig(command="node", args=[str(MEMORY)], startup_timeout_sec=120,
                                           env={"MEMORY_FILE_PATH": str(work / f"memory{i}.jsonl")})
    return cfgs


async def _start(cfgs: dict[str, McpServerConfig], work: Path) -> tuple[float, float]:
    """(seconds until every server is ready, CPU-seconds the servers used getting there)."""
    manager = McpConnectionManager(cfgs, on_event=lambda e: None, on_elicit=None, log_dir=work)
    started = time.perf_counter()
    await manager.start()
    elapsed = time.perf_counter() - started
    cpu = 0.0
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
            cpu += times.user + times.system
        except psutil.Error:
            pass
    status = manager.status()
    await manager.aclose()
    failed = [n for n, s in status.items() if s.state != "ready"]
    assert not failed, f"servers not ready: {failed}"
    return elapsed, cpu


def many_round(work: Path, kind: str) -> tuple[float, float, float]:
    """(one alone s, all ten s, CPU-seconds of the ten)."""
    one = {"python": (1, 0), "node": (0, 1)}[kind]
    ten = {"python": (10, 0), "node": (0, 10)}[kind]
    alone, _ = asyncio.run(_start(_configs(*one, work), work))
    together, cpu = asyncio.run(_start(_configs(*ten, work), work))
    return alone, together, cpu


# -- import time -------------------------------------------------------------------------------


def import_offenders(code: str, top: int) -> tuple[list[tuple[str, float]], list[tuple[str, float]], list[str]]:
    """Top packages and modules by own import time (ms), and which format checkers were imported."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True)
    modules: list[tuple[str, float]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line or "self [us]" in line:
            continue
        own, _cumulative, name = line[len("import time:"):].split("|")
        modules.append((name.strip(), int(own) / 1000))
    packages: dict[str, float] = defaultdict(float)
    for name, ms in modules:
        packages[name.split(".")[0]] += ms
    extras = sorted({n.split(".")[0] for n, _ in modules} & {"jsonschema", "rfc3987_syntax", "lark", "fqdn",
                                                            "rfc3339_validator", "webcolors", "isoduration"})
    by_cost = sorted(packages.items(), key=lambda kv: -kv[1])[:top]
    return by_cost, sorted(modules, key=lambda kv: -kv[1])[:top], extras


# -- report ------------------------------------------------------------------------------------


def _med(values: list[float]) -> float:
    return statistics.median(values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="one round of each, fewer calls (under a minute)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    rounds = 1 if args.quick else args.rounds
    calls = 4 if args.quick else 8
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}, "
          f"{os.cpu_count()} cores, {rounds} interleaved round(s)")

    floors, readies, firsts, laters, srv, srv_floor = [], [], [], [], [], []
    many: dict[str, list[tuple[float, float, float]]] = {"python": [], "node": []}
    with tempfile.TemporaryDirectory() as tmp:
        # The folders' nbagent.toml are read only where trusted: the kernels and servers started
        # below inherit this variable (a person would run `nbagent trust` once).
        os.environ[TRUST_ENV] = os.path.realpath(tmp)
        work, bare = Path(tmp) / "demo", Path(tmp) / "bare"
        work.mkdir()
        bare.mkdir()
        demo_config(work, script(work / "replay.json"), work / "record.jsonl")
        (bare / "nbagent.toml").write_text(f'model = "replay:{script(bare / "replay.json")}"\n', encoding="utf-8")
        for _ in range(rounds):
            floor, ready, durations = kernel_round(bare, work, calls)
            floors.append(floor)
            readies.append(ready)
            firsts.append(durations[0])
            laters.extend(durations[1:])
            srv_floor.append(server_floor())
            srv.append(server_initialize(work))
            for kind in ("python", "node") if MEMORY.exists() else ("python",):
                many[kind].append(many_round(work, kind))

    def ratio_line(label: str, ours: float, floor: float, target: float, unit: str = "s") -> None:
        r = ours / floor
        print(f"{label:<44} {ours:7.2f} {unit} vs floor {floor:7.2f} {unit}  ratio {r:5.2f}  "
              f"target <= {target:.2f} {'OK' if r <= target else 'MISSED'}")

    ratio_line("%load_ext nbagent -> session ready", _med([r[0] for r in readies]), _med([f[0] for f in floors]), 1.3)
    ratio_line("  the same, kernel CPU", _med([r[1] for r in readies]), _med([f[1] for f in floors]), 1.3, "cpu-s")
    extra_ms = (_med(firsts) - _med(laters)) * 1000
    print(f"{'first tool call after ready':<44} {_med(firsts) * 1000:7.1f} ms vs later {_med(laters) * 1000:7.1f} ms"
          f"  +{extra_ms:.1f} ms  target <= +50 ms {'OK' if extra_ms <= 50 else 'MISSED'}")
    ratio_line("nbagent mcp-server -> initialize answered", _med(srv), _med(srv_floor), 1.3)
    cores = os.cpu_count() or 1
    for kind, runs in many.items():
        if not runs:
            print(f"10 {kind} servers: skipped ({MEMORY} is not installed: npm ci --prefix tests/node)")
            continue
        alone, together, cpu = (_med([r[i] for r in runs]) for i in range(3))
        ratio_line(f"10 {kind} servers ready (1 alone {alone:.2f} s, CPU {cpu:.1f} s)", together, alone + cpu / cores, 1.10)
        print(f"{'':<44} (floor = one alone + CPU-s of the ten / {cores} cores; "
              f"against the larger of the two alone: ratio {together / max(alone, cpu / cores):.2f})")

    for title, code in (("kernel session", f"import {SESSION_MODULES}"),
                        ("nbagent mcp-server", "import nbagent.cli, nbagent.server.cli, nbagent.server.app")):
        packages, modules, extras = import_offenders(code, 8)
        print(f"-X importtime, {title}: format checkers imported: {', '.join(extras) or 'none'}")
        print("  packages (own ms): " + ", ".join(f"{n} {ms:.0f}" for n, ms in packages))
        print("  modules  (own ms): " + ", ".join(f"{n} {ms:.0f}" for n, ms in modules))
    return 0


if __name__ == "__main__":
    sys.exit(main())
