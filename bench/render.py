"""Rendering cost of a streamed answer in a real kernel.

Streams 20,000 text deltas (bursts of 10 every 2 ms, a fast model) through the turn view in an
ipykernel, once with rendering on and once off, and prints: display updates (widget comm
messages) sent, updates per second of streaming, and the kernel's CPU time (all threads, so the
IOPub sending is included). Targets: at most 25 display updates per second of streaming, and
under 5% extra CPU (extra kernel CPU seconds per second of streaming).

Run: ``.venv/bin/python bench/render.py [--deltas N]``.
"""

from __future__ import annotations

import argparse
import json
import queue
import sys
import time

from jupyter_client.manager import KernelManager

KERNEL_CODE = r"""
import asyncio, json, time
from IPython.display import display
from nbagent.notebook.render import WidgetTurn
from nbagent.protocol import AgentMessage, AgentMessageDelta, Event, TurnCompleted

async def _bench(render, n, burst=10, pause=0.002):
    view = WidgetTurn(lambda op: None, model_label="bench", scripted=True, thread="bench", policy="never", render_text=render)
    display(view.widget)
    await asyncio.sleep(0.2)
    words = [f"w{k} " for k in range(n)]
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(0, n, burst):
        for word in words[i:i + burst]:
            view.handle(Event.wrap(AgentMessageDelta(item_id="m", delta=word)))
        await asyncio.sleep(pause)
    view.handle(Event.wrap(AgentMessage(item_id="m", text="".join(words))))
    view.handle(Event.wrap(TurnCompleted()))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    await asyncio.sleep(0.5)  # let IOPub drain before the next run
    updates = view.streams["m"].updates if render else 0
    print("@@" + json.dumps({"wall": wall, "cpu": cpu, "updates": updates}))
"""


def run_cell(kc, code: str, timeout: float = 300) -> tuple[dict, int]:
    """Execute; return the kernel's JSON line and the number of comm_msg sent meanwhile."""
    msg_id = kc.execute(code)
    result: dict = {}
    comm_msgs = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        kind = msg["header"]["msg_type"]
        if kind == "comm_msg":
            comm_msgs += 1
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if kind == "stream":
            for line in msg["content"]["text"].splitlines():
                if line.startswith("@@"):
                    result = json.loads(line[2:])
        elif kind == "error":
            raise RuntimeError("\n".join(msg["content"]["traceback"]))
        elif kind == "status" and msg["content"]["execution_state"] == "idle":
            return result, comm_msgs
    raise TimeoutError("benchmark cell did not finish")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=20_000)
    args = parser.parse_args()
    km = KernelManager(kernel_name="python3")
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        run_cell(kc, KERNEL_CODE)
        runs = {}
        for render in (False, True, False, True):
            data, comms = run_cell(kc, f"await _bench({render}, {args.deltas})")
            runs.setdefault(render, []).append((data, comms))
        (off, off_comms), (on, on_comms) = runs[False][-1], runs[True][-1]
        display_updates = on_comms - off_comms
        per_second = display_updates / on["wall"]
        extra_cpu = (on["cpu"] - off["cpu"]) / on["wall"]
        print(f"deltas streamed:          {args.deltas} over {on['wall']:.2f} s (rendering on), {off['wall']:.2f} s (off)")
        print(f"comm messages sent:       {on_comms} with rendering, {off_comms} without")
        print(f"display updates (stream): {on['updates']} flushes, {display_updates} extra comm messages")
        print(f"updates per second:       {per_second:.1f} (target <= 25)")
        print(f"kernel CPU time:          {on['cpu']:.3f} s with rendering, {off['cpu']:.3f} s without")
        print(f"CPU overhead:             {100 * extra_cpu:.2f}% of one core while streaming (target < 5%)")
        ok = per_second <= 25 and extra_cpu < 0.05
        print("targets: OK" if ok else "targets: MISSED")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
