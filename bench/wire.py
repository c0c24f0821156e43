"""What the wire tap costs a tool call, side by side: one stdio ``echo`` server called through
``McpConnection`` with the tap (as shipped) and with the tap bypassed, in interleaved rounds, so
load on the machine falls on both alike. Also what an inspection costs (serialise and redact the
kept messages), which is paid only when someone looks.

Run: ``.venv/bin/python bench/wire.py [--calls 200 --rounds 6]``.
Target: tapped / bypassed <= 1.02 per call (the tap is one deque append per message).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nbagent.config import McpServerConfig  # noqa: E402
from nbagent.mcp.connection import McpConnection  # noqa: E402
from nbagent.mcp.wire import WireTap  # noqa: E402


async def _decline(_request: object) -> object:
    raise RuntimeError("no elicitation here")


async def _connection(tapped: bool, logs: Path) -> McpConnection:
    cfg = McpServerConfig(command=sys.executable, args=[str(ROOT / "tests" / "servers" / "echo.py")])
    conn = McpConnection("echo", cfg, log_dir=logs, on_event=lambda e: None, on_elicit=_decline)  # type: ignore[arg-type]
    if not tapped:
        conn.wire.tap = lambda transport: transport  # type: ignore[method-assign]
    await conn.start()
    return conn


async def main(calls: int, rounds: int) -> None:
    logs = Path("/tmp/nbagent-bench-wire")
    conns = {"tapped": await _connection(True, logs), "bypassed": await _connection(False, logs)}
    per_call: dict[str, list[float]] = {name: [] for name in conns}
    try:
        for r in range(rounds):
            order = list(conns) if r % 2 == 0 else list(reversed(conns))
            for name in order:
                conn = conns[name]
                start = time.perf_counter()
                for _ in range(calls):
                    await conn.call_tool("echo", {"text": "hi"})
                per_call[name].append((time.perf_counter() - start) / calls)
        tap = conns["tapped"].wire
        start = time.perf_counter()
        shown = tap.messages(["a-secret-value-123"])
        inspect_ms = (time.perf_counter() - start) * 1000
    finally:
        for conn in conns.values():
            await conn.aclose()
    t, b = statistics.median(per_call["tapped"]), statistics.median(per_call["bypassed"])
    print(f"load average {os.getloadavg()[0]:.2f}; {calls} calls x {rounds} rounds each")
    print(f"per call: tapped {t * 1e6:.0f} us, bypassed {b * 1e6:.0f} us, ratio {t / b:.3f}")
    print(f"one inspection of {len(shown)} kept messages (serialise + redact): {inspect_ms:.1f} ms")
    note = WireTap()
    start = time.perf_counter()
    for _ in range(100_000):
        note.note("sent", None)
    print(f"one note (deque append): {(time.perf_counter() - start) / 100_000 * 1e9:.0f} ns")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.rounds))
