"""What binding approvals to the definition costs per call, over real stdio.

A call under a session approval only checks that no re-list is pending (no round trip); a call
an "always" from the config lets through lists the server's tools again first. This prints the
median time of one ``read_note`` call each way (tests/servers/features.py) and their ratio.

Run: ``.venv/bin/python bench/approval_relist.py [--calls 200]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from nbagent.config import McpServerConfig
from nbagent.mcp.manager import McpConnectionManager
from nbagent.protocol import CallInfo

SERVER = Path(__file__).resolve().parents[1] / "tests" / "servers" / "features.py"


async def measure(calls: int) -> dict[bool, float]:
    with tempfile.TemporaryDirectory() as logs:
        cfg = McpServerConfig(command=sys.executable, args=[str(SERVER)])
        manager = McpConnectionManager({"feat": cfg}, on_event=lambda e: None, on_elicit=None, log_dir=Path(logs))
        await manager.start()
        try:
            spec = next(s for s in manager.list_tools() if s.raw_name == "read_note")
            info = CallInfo(thread_id="t", turn_id="u", call_id="c")
            times: dict[bool, list[float]] = {False: [], True: []}
            for n in range(calls * 2):
                relist = bool(n % 2)
                started = time.perf_counter()
                current = await manager.current_definition(spec, relist=relist)
                assert not isinstance(current, str), current
                result = await manager.call_tool(current, {"key": "k"}, info)
                assert not result.is_error, result
                times[relist].append(time.perf_counter() - started)
            return {relist: statistics.median(values) for relist, values in times.items()}
        finally:
            await manager.aclose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args(argv)
    medians = asyncio.run(measure(args.calls))
    session, always = medians[False] * 1000, medians[True] * 1000
    print(
        f"median call over stdio ({args.calls} each): session approval {session:.2f} ms, "
        f"'always' with a re-list {always:.2f} ms (ratio {always / session:.2f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
