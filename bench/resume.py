"""Resume and thread listing at scale, against a baseline checkout, interleaved in one run.

- Resume: ``ThreadState.resume`` (what a session does on ``%%agent --resume`` / ``nbagent resume``:
  lock, read, validate, index check, repair scan) of threads of 10k / 30k / 100k items, each in a
  fresh process. Per-item cost printed for each size: linear means it stays flat. The full
  collection right after is timed on its own, so no cost of the load hides in the next cell.
- Listing: ``ThreadStore.list_threads`` over 10,000 threads, on a freshly opened store as
  ``nbagent threads`` runs (open + list; interpreter start and imports excluded), then on an open store as a kernel lists, then just after
  another process added a thread and just after a rollout was deleted (the listing must see both).

Each figure is measured by this checkout and by ``--baseline`` (a worktree of the code before,
with its own ``.venv``) in alternating order, round after round, and printed as a ratio.

Run: ``.venv/bin/python bench/resume.py --baseline /path/to/base-worktree [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
SIZES = (10_000, 30_000, 100_000)
THREADS = 10_000
TARGET_RESUME_100K_S = 1.2
TARGET_LIST_MS = 50.0
LIST_REPEAT = 20


# -- children: run by each contender's interpreter, so they import that contender's nbagent -----


def _child_resume(home: str, thread_id: str) -> dict[str, float]:
    import asyncio
    import gc

    from nbagent.config import Config
    from nbagent.core.bus import EventBus
    from nbagent.core.thread import ThreadState
    from nbagent.store import ThreadStore

    store = ThreadStore(home)
    state = ThreadState(
        store, Config(home=home), EventBus(), cwd=home, notebook_path=None, busy=lambda: False, announce=lambda n: None
    )
    loop = asyncio.new_event_loop()
    wall, cpu = time.perf_counter(), time.process_time()
    loop.run_until_complete(state.resume(thread_id))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    collect = time.perf_counter()
    gc.collect()
    collect = time.perf_counter() - collect
    items = len(state.items)
    state.close()
    store.close()
    loop.close()
    return {"wall": wall, "cpu": cpu, "collect": collect, "items": items}


def _child_list(home: str) -> dict[str, float]:
    from nbagent.protocol.items import UserMessage
    from nbagent.protocol.rollout import ItemRecord, ThreadMeta
    from nbagent.store import ThreadStore

    with ThreadStore(home) as settle:  # the last round's change is seconds old now: recorded as seen
        settle.list_threads()
    started = time.perf_counter()
    store = ThreadStore(home)
    rows = store.list_threads()
    cold = time.perf_counter() - started
    assert len(rows) == 50, len(rows)
    warm = []
    for _ in range(LIST_REPEAT):
        started = time.perf_counter()
        store.list_threads()
        warm.append(time.perf_counter() - started)
    # Another process's thread, whose own index update never happened (a crash, a busy index).
    added = f"thread_added_{os.getpid()}"
    path = Path(home, "threads", f"{added}.jsonl")
    lines = [ThreadMeta(thread_id=added), ItemRecord(item=UserMessage(text="from elsewhere"))]
    path.write_bytes(b"".join(line.model_dump_json().encode() + b"\n" for line in lines))
    started = time.perf_counter()
    rows = store.list_threads()
    after_add = time.perf_counter() - started
    assert rows[0].id == added, rows[0].id
    path.unlink()
    started = time.perf_counter()
    rows = store.list_threads()
    after_delete = time.perf_counter() - started
    assert added not in {r.id for r in rows}
    store.close()
    return {"cold": cold, "warm": statistics.median(warm), "after_add": after_add, "after_delete": after_delete}


# -- the parent: data, interleaving, report -------------------------------------------------------


def _write_thread(home: Path, thread_id: str, n_items: int) -> None:
    sys.path.insert(0, str(HERE.parent))
    from core import _thread_lines  # the lines bench/core.py resumes: a tool-using turn every ~8 items

    from nbagent.protocol.rollout import ThreadMeta

    lines = [ThreadMeta(thread_id=thread_id, model="gpt-5.1"), *_thread_lines(n_items, thread_id)]
    (home / "threads").mkdir(parents=True, exist_ok=True)
    with open(home / "threads" / f"{thread_id}.jsonl", "wb") as f:
        for line in lines:
            f.write(line.__pydantic_serializer__.to_json(line) + b"\n")


def _write_threads(home: Path, n: int) -> None:
    """``n`` short threads (a turn, a prompt, an answer), written as rollouts; the index is built
    from them by the first store that opens the home."""
    from nbagent.protocol.items import AssistantMessage, UserMessage
    from nbagent.protocol.rollout import ItemRecord, ThreadMeta, TurnRecord

    d = home / "threads"
    d.mkdir(parents=True, exist_ok=True)
    base = time.time() - 10 * n
    for i in range(n):
        tid, at = f"thread_{i:08d}", base + 10 * i
        lines = [
            ThreadMeta(thread_id=tid, name=f"analysis {i % 97}", model="gpt-5.1", cwd="/work", created_at=at),
            TurnRecord(turn_id=f"turn_{i}", status="started", at=at + 1),
            ItemRecord(item=UserMessage(turn_id=f"turn_{i}", text=f"Plot revenue for region {i}.", created_at=at + 1)),
            ItemRecord(item=AssistantMessage(turn_id=f"turn_{i}", text="Done; the plot is above.", created_at=at + 2)),
            TurnRecord(turn_id=f"turn_{i}", status="completed", at=at + 3),
        ]
        (d / f"{tid}.jsonl").write_bytes(b"".join(ln.model_dump_json().encode() + b"\n" for ln in lines))


def _run(python: str, *args: str) -> dict[str, float]:
    out = subprocess.run([python, str(HERE), "--child", *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{python} {' '.join(args)} failed:\n{out.stderr}")
    return json.loads(out.stdout.splitlines()[-1])


def _contenders(baseline: Path) -> dict[str, str]:
    base_python = baseline / ".venv" / "bin" / "python"
    if not base_python.exists():
        raise SystemExit(f"{base_python} not found: make a worktree of the code before and `make setup` there")
    return {"nbagent": sys.executable, "baseline": str(base_python)}


def _load() -> str:
    return "load average " + " / ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="worktree of the code to compare against")
    parser.add_argument("--quick", action="store_true", help="one round, under a minute")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    contenders = _contenders(args.baseline)
    rounds = 1 if args.quick else args.rounds
    print(_load(), flush=True)

    resume: dict[tuple[str, int], list[dict[str, float]]] = {}
    listing: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for n in SIZES:
            _write_thread(root / f"resume{n}", f"thread_r{n}", n)
        _write_threads(root / "list-nbagent", THREADS)
        _run(sys.executable, "list", str(root / "list-nbagent"))  # the index, built before any timing
        shutil.copytree(root / "list-nbagent", root / "list-baseline")
        _run(contenders["baseline"], "list", str(root / "list-baseline"))  # its rows now name its copy
        for r in range(rounds):
            order = list(contenders) if r % 2 == 0 else list(reversed(contenders))
            for n in SIZES:
                for name in order:
                    resume.setdefault((name, n), []).append(
                        _run(contenders[name], "resume", str(root / f"resume{n}"), f"thread_r{n}")
                    )
            for name in order:
                listing.setdefault(name, []).append(_run(contenders[name], "list", str(root / f"list-{name}")))

    def med(runs: list[dict[str, float]], key: str) -> float:
        return statistics.median(run[key] for run in runs)

    print(f"\nresume (ThreadState.resume in a fresh process; median of {rounds} round(s))")
    print(f"{'items':>8} {'who':>9} {'wall ms':>9} {'cpu ms':>9} {'us/item':>8} {'gc after ms':>12} {'wall ratio':>11}")
    for n in SIZES:
        for name in contenders:
            runs = resume[(name, n)]
            ratio = med(runs, "wall") / med(resume[("baseline", n)], "wall")
            print(
                f"{n:>8,} {name:>9} {med(runs, 'wall') * 1e3:>9.0f} {med(runs, 'cpu') * 1e3:>9.0f} "
                f"{med(runs, 'wall') / n * 1e6:>8.2f} {med(runs, 'collect') * 1e3:>12.1f} {ratio:>11.2f}"
            )
    for name in contenders:
        for key in ("wall", "cpu"):
            small, large = (med(resume[(name, n)], key) / n for n in (SIZES[0], SIZES[-1]))
            print(f"linearity ({name}, {key}): per-item cost at {SIZES[-1]:,} / at {SIZES[0]:,} = {large / small:.2f}")
    big = med(resume[("nbagent", SIZES[-1])], "wall")
    print(f"resume of {SIZES[-1]:,} items: {big:.2f} s, target <= {TARGET_RESUME_100K_S} s "
          f"({big / TARGET_RESUME_100K_S:.2f} of target)")

    print(f"\nthreads listing over {THREADS:,} threads (ms, median of {rounds} round(s))")
    keys = [("cold", "open + list, fresh process (as `nbagent threads`)"), ("warm", "list on an open store"),
            ("after_add", "list after another process added a thread"), ("after_delete", "list after a rollout was deleted")]
    print(f"{'':<52} {'nbagent':>9} {'baseline':>9} {'ratio':>7}")
    for key, label in keys:
        new, old = med(listing["nbagent"], key) * 1e3, med(listing["baseline"], key) * 1e3
        print(f"{label:<52} {new:>9.1f} {old:>9.1f} {new / old:>7.2f}")
    cold = med(listing["nbagent"], "cold") * 1e3
    print(f"open + list: {cold:.1f} ms, target <= {TARGET_LIST_MS:.0f} ms ({cold / TARGET_LIST_MS:.2f} of target)")
    print(_load())
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kind, *rest = sys.argv[2:]
        print(json.dumps(_child_resume(*rest) if kind == "resume" else _child_list(*rest)))
        sys.exit(0)
    sys.exit(main())
