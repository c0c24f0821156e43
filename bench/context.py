"""State assembly on long threads: what building one model request costs.

Prints, for threads of 10k / 30k / 100k items: the first (cold) view, per item, to show it is
linear; then a request once the view is cached (one round's items appended, then the view,
the estimate and the request built), against the 50 ms target and against the naive baseline
of rebuilding the view from every item. ``--quick`` stops at 30k.

    .venv/bin/python bench/context.py
"""

from __future__ import annotations

import argparse
import os
import time

from nbagent.core.context import ContextView
from nbagent.models.base import ModelRequest
from nbagent.protocol import AssistantMessage, CompactionItem, FunctionCall, FunctionCallOutput, Item, UserMessage

TARGET_MS = 50.0
REPEAT = 5


def thread(n: int) -> list[Item]:
    """Turns of one question, four calls with ~1 kB outputs, one answer; a compaction every 20k."""
    items: list[Item] = []
    turn = 0
    while len(items) < n:
        turn += 1
        items.append(UserMessage(turn_id=f"t{turn}", text=f"question {turn}"))
        for c in range(4):
            call_id = f"c{turn}_{c}"
            items.append(FunctionCall(turn_id=f"t{turn}", call_id=call_id, name="read", arguments='{"n": 1}'))
            items.append(FunctionCallOutput(turn_id=f"t{turn}", call_id=call_id, output="x" * 1000))
        items.append(AssistantMessage(turn_id=f"t{turn}", text=f"answer {turn}"))
        if turn % 2000 == 0:
            items.append(CompactionItem(summary=f"summary up to {turn}", replaced=len(items)))
    return items[:n]


def request(view: ContextView, items: list[Item]) -> ModelRequest:
    shown = view.sync(items)
    view.estimate(items)
    return ModelRequest.model_construct(model="m", instructions="i", items=list(shown), tools=[], purpose="turn")


def best(fn) -> float:
    times = []
    for _ in range(REPEAT):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    sizes = [10_000, 30_000] if parser.parse_args().quick else [10_000, 30_000, 100_000]
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'items':>8} {'cold ms':>9} {'µs/item':>8} {'cached ms':>10} {'vs 50 ms':>9} {'rebuild ms':>11} {'cached/rebuild':>15}")
    for n in sizes:
        items = thread(n)
        cold = best(lambda items=items: ContextView().sync(items))
        view = ContextView()
        request(view, items)
        round_items = thread(10)[1:10]

        def one_round(items: list = items, view: ContextView = view, round_items: list = round_items) -> None:
            items.extend(round_items)
            request(view, items)

        cached = best(one_round)
        rebuild = best(lambda items=items: request(ContextView(), items))
        print(f"{n:>8,} {cold:>9.1f} {cold * 1000 / n:>8.2f} {cached:>10.2f} {cached / TARGET_MS:>9.3f} "
              f"{rebuild:>11.1f} {cached / rebuild:>15.4f}")


if __name__ == "__main__":
    main()
