"""What a turn's checkpoint costs, and how long undo takes.

A workspace of 10,000 files (in a git repository, all committed; and in a plain folder); a real
``Session`` turn whose scripted model calls one tool that rewrites 3 of them. The same turn runs
with its checkpoint (a ghost commit before the call, another as it ends, the ``GhostSnapshot``
recorded) and without (the snapshot hook made a no-op), alternating, several rounds; the medians
are printed side by side with the difference, the ``Undo`` op's time after a checkpointed
turn, and the checkpoint's own work timed alone (snapshot before, compare after), which a
loaded machine disturbs less than the difference of two whole turns. In a plain folder the very first turn copies every file into the private store; that
one-time cost is printed apart, and so is the first turn of a new thread on the same workspace
(its index seeded from the last thread's), the steady turn against the target. Last, a
checkpoint around a turn (or an outside agent's call) that changes nothing: with the workspace
watched (no git started) and, beside it, asking git as a workspace with no watcher does.

Target: the checkpoint adds at most 250 ms to the turn, in either kind of workspace.

Run: ``.venv/bin/python bench/checkpoint.py [--rounds N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from nbagent import Session
from nbagent.checkpoint import TurnCheckpoint, ghost
from nbagent.config import Config
from nbagent.core import tool_call
from nbagent.protocol import Undo, UndoCompleted

FILES = 10_000
CHANGED = 3
TARGET_MS = 250.0


def make_workspace(root: Path, kind: str) -> Path:
    ws = root / kind
    for n in range(FILES):
        folder = ws / f"d{n // 100:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n:05d}.txt").write_text(f"file {n}\n" * 8)
    if kind == "git":
        env = ["-c", "user.name=b", "-c", "user.email=b@b"]
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=ws, check=True)
        subprocess.run(["git", "add", "-A"], cwd=ws, check=True)
        subprocess.run(["git", *env, "commit", "-q", "-m", "start"], cwd=ws, check=True)
    return ws


def script(root: Path, round_: int) -> str:
    path = root / f"script{round_}.json"
    steps: list[dict[str, Any]] = [{"tool_calls": [{"name": "touch", "arguments": {"round": round_}}]}, {"text": "done"}]
    path.write_text(json.dumps({"responses": steps}))
    return f"replay:{path}"


async def one_turn(ws: Path, home: Path, model: str, thread: str | None) -> tuple[float, str]:
    """One turn that rewrites 3 files; its wall time (ms) and the thread."""

    def touch(round: int) -> str:
        for n in range(CHANGED):
            (ws / "d000" / f"f{n:05d}.txt").write_text(f"round {round}\n")
        return "ok"

    config = Config(home=str(home), approval_policy="full-auto")
    async with Session(model=model, config=config, cwd=ws, thread=thread) as session:
        session.register_tool(touch, name="touch")
        started = time.perf_counter()
        result = await session.run("change three files")
        took = (time.perf_counter() - started) * 1000
    assert result.ok, result.error
    return took, result.thread_id


async def undo_ms(ws: Path, home: Path, thread: str) -> float:
    async with Session(model="undo", config=Config(home=str(home)), cwd=ws, thread=thread) as session:
        started = time.perf_counter()
        done = await session.perform(Undo())
        took = (time.perf_counter() - started) * 1000
    assert isinstance(done, UndoCompleted) and done.success, done
    return took


async def measure(root: Path, kind: str, rounds: int) -> dict[str, float]:
    ws, home = make_workspace(root, kind), root / f"home-{kind}"
    real = tool_call.before_change

    async def no_checkpoint(turn: Any, spec: Any) -> None:
        return None

    first, thread = await one_turn(ws, home, script(root, 0), None)  # the plain store's first copy
    with_cp, without, undos = [], [], []
    for n in range(1, rounds + 1):
        tool_call.before_change = real
        took, thread = await one_turn(ws, home, script(root, n), thread)
        with_cp.append(took)
        undos.append(await undo_ms(ws, home, thread))
        tool_call.before_change = no_checkpoint
        took, _ = await one_turn(ws, home, script(root, n), thread)
        without.append(took)
    tool_call.before_change = real
    fresh, _ = await one_turn(ws, home, script(root, rounds + 1), None)  # a new thread on the same workspace
    alone = [await checkpoint_alone(ws, home, n) for n in range(rounds)]
    watched = await unchanged(ws, home, "thread_quiet_watched", rounds)
    watch, ghost.watch = ghost.watch, lambda *args: None  # type: ignore[assignment]  # the same, asking git
    try:
        asked = await unchanged(ws, home, "thread_quiet_git", rounds)
    finally:
        ghost.watch = watch
    return {"first": first, "with": statistics.median(with_cp), "without": statistics.median(without),
            "undo": statistics.median(undos), "fresh": fresh, "alone": statistics.median(alone),
            "quiet": watched, "quiet git": asked}  # fmt: skip


async def unchanged(ws: Path, home: Path, thread: str, rounds: int) -> float:
    """A checkpoint's work (before and after) for a turn or outside call that changes nothing (ms,
    median), once a first snapshot of the thread is taken."""
    took = []
    for n in range(rounds + 1):
        checkpoint = TurnCheckpoint(ws, home, thread, f"quiet_{n}")
        started = time.perf_counter()
        await checkpoint.before_change()
        assert await checkpoint.settle() is None
        took.append((time.perf_counter() - started) * 1000)
    return statistics.median(took[1:])


async def checkpoint_alone(ws: Path, home: Path, n: int) -> float:
    """The checkpoint's own work around a change of 3 files, outside any turn (ms)."""
    checkpoint = TurnCheckpoint(ws, home, "thread_bench", f"turn_{n}")
    started = time.perf_counter()
    await checkpoint.before_change()
    took = time.perf_counter() - started
    for k in range(CHANGED):
        (ws / "d001" / f"f{100 + k:05d}.txt").write_text(f"alone {n}\n")
    started = time.perf_counter()
    await checkpoint.settle()
    return (took + time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print(f"{FILES:,} files, a turn that rewrites {CHANGED}; medians of {args.rounds} rounds (ms)")
    print(f"{'workspace':<10} {'no checkpoint':>14} {'checkpoint':>11} {'added':>8} {'ratio':>6} {'undo':>7} "
          f"{'first turn':>11} {'new thread':>11} {'alone':>6} {'unchanged':>10} {'(git)':>6}  target: added <= {TARGET_MS:.0f} ms")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for kind in ("git", "plain"):
            m = asyncio.run(measure(Path(tmp), kind, args.rounds))
            added = m["with"] - m["without"]
            verdict = "OK" if added <= TARGET_MS else "MISSED"
            print(f"{kind:<10} {m['without']:>14.1f} {m['with']:>11.1f} {added:>8.1f} {m['with'] / m['without']:>6.2f} "
                  f"{m['undo']:>7.1f} {m['first']:>11.1f} {m['fresh']:>11.1f} {m['alone']:>6.1f} {m['quiet']:>10.2f} "
                  f"{m['quiet git']:>6.1f}  {verdict}")  # fmt: skip


if __name__ == "__main__":
    main()
