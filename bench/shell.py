"""What the ``shell`` tool adds to a command's start: ``true`` run directly, against the same argv
through the tool (the session's fork server, a launcher forked from it, the sandbox, the output
pumps, the result), side by side. The first command of a session also starts the fork server;
it is timed apart and not counted in the medians.

Interleaved so load drifts hit each alike: ``true`` started directly with its output piped (as
the tool reads it), the tool under ``danger-full-access`` (the launcher alone) and under
``workspace-write`` (namespaces, mounts, Landlock). Target: the sandboxed tool within 20 ms of
the direct run, median.

Run: ``.venv/bin/python bench/shell.py [--runs 30]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from nbagent import sandbox
from nbagent.protocol import CallInfo
from nbagent.sandbox import SandboxMode, SandboxWorkspaceWrite
from nbagent.tools import ShellTools

TARGET_MS = 20.0
INFO = CallInfo(thread_id="bench", turn_id="bench", call_id="bench")


async def direct() -> float:
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        "true", stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    await proc.communicate()
    return time.perf_counter() - started


async def through(tools: ShellTools) -> float:
    [spec] = tools.list_tools()
    started = time.perf_counter()
    result = await tools.call_tool(spec, {"command": ["true"]}, INFO)
    took = time.perf_counter() - started
    assert not result.is_error, result
    return took


async def measure(runs: int, work: Path) -> dict[str, list[float]]:
    modes: tuple[SandboxMode, ...] = ("danger-full-access", "workspace-write")
    tools = {mode: ShellTools(sandbox.resolve(mode, SandboxWorkspaceWrite(), workspace=work, home=work / "home")) for mode in modes}
    await through(tools["danger-full-access"])  # the sandbox probe, once per process, is not a start
    times: dict[str, list[float]] = {"first": [await through(tools["workspace-write"])], "direct": []}
    times |= {mode: [] for mode in modes}
    for _ in range(runs):
        times["direct"].append(await direct())
        for mode in modes:
            times[mode].append(await through(tools[mode]))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="starts per way")
    args = parser.parse_args()
    if missing := sandbox.available():
        sys.exit(f"no sandbox on this system: {', '.join(missing)}")
    with tempfile.TemporaryDirectory() as tmp:
        times = asyncio.run(measure(args.runs, Path(tmp)))
    ms = {way: statistics.median(values) * 1000 for way, values in times.items()}
    cost = ms["workspace-write"] - ms["direct"]
    print(f"shell tool, true (median of {args.runs}): direct {ms['direct']:.1f} ms, "
          f"tool unsandboxed {ms['danger-full-access']:.1f} ms, tool sandboxed {ms['workspace-write']:.1f} ms "
          f"(x{ms['workspace-write'] / ms['direct']:.1f}): {cost:+.1f} ms over direct "
          f"(target <= +{TARGET_MS:.0f} ms) {'OK' if cost <= TARGET_MS else 'MISSED'}; "
          f"a session's first command, which starts the fork server: {ms['first']:.1f} ms")  # fmt: skip
    if cost > TARGET_MS:
        sys.exit(1)


if __name__ == "__main__":
    main()
