"""Crash safety: a writer killed with SIGKILL mid-turn loses no confirmed item.

The writer and the reader are separate processes, so nothing survives in memory: what the
reader sees is what the OS kept of the flushed lines.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import nbagent

CHILD = Path(__file__).with_name("crash_child.py")
REPO = Path(nbagent.__file__).resolve().parent.parent
TIMEOUT = 30.0

LOADER = r"""
import json, sys
from pathlib import Path
from nbagent.protocol.items import FunctionCall, FunctionCallOutput
from nbagent.protocol.rollout import ItemRecord
from nbagent.store import ThreadStore, repair_open_calls
home, thread_id = Path(sys.argv[1]), sys.argv[2]
store = ThreadStore(home)
t, w = store.open_thread(thread_id)
repairs = repair_open_calls(t.items)
with w:
    for r in repairs:
        w.append(ItemRecord(item=r))
again = store.load(thread_id)
calls = {i.call_id for i in again.items if isinstance(i, FunctionCall)}
outs = {i.call_id for i in again.items if isinstance(i, FunctionCallOutput)}
live = [r.model_dump() for r in store.list_threads() if r.id == thread_id]
n = store.rebuild_index()
rebuilt = [r.model_dump() for r in store.list_threads() if r.id == thread_id]
print(json.dumps({
    "ids": [i.id for i in t.items],
    "n_items": len(t.items),
    "warnings": t.warnings,
    "open_turn": t.open_turn_id,
    "repairs": [r.model_dump(mode="json") for r in repairs],
    "calls_without_output": sorted(calls - outs),
    "n_after_repair": len(again.items),
    "live": live,
    "rebuilt": rebuilt,
    "rebuild_count": n,
}))
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return env


def _reader(stream, q: queue.Queue[str | None]) -> None:
    for line in stream:
        q.put(line.rstrip("\n"))
    q.put(None)


def _run_and_kill(home: Path, thread_id: str, mode: str, kill_after: int) -> list[str]:
    """Start the child, collect ``kill_after`` confirmations (or the hang), SIGKILL it."""
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), str(home), thread_id, mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    q: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, q), daemon=True).start()
    confirmed: list[str] = []
    deadline = time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            try:
                line = q.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                pytest.fail(f"child exited early: {proc.wait(5)} {proc.stderr.read() if proc.stderr else ''}")
            if line == "HANGING":
                break
            if line.startswith("ITEM "):
                confirmed.append(line.split()[2])
                if mode == "fast" and len(confirmed) >= kill_after:
                    break
        else:
            pytest.fail("no confirmations before the deadline")
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    # Lines the child confirmed after we stopped reading are confirmed too (they were printed
    # after their append returned); collect them from the pipe.
    while True:
        try:
            line = q.get(timeout=5)
        except queue.Empty:
            break
        if line is None:
            break
        if line.startswith("ITEM "):
            confirmed.append(line.split()[2])
    return confirmed


def _load_in_new_process(home: Path, thread_id: str) -> dict:
    res = subprocess.run(
        [sys.executable, "-c", LOADER, str(home), thread_id],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=_env(),
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.mark.parametrize(("mode", "kill_after"), [("fast", 1500), ("fast", 37), ("hang", 0)])
def test_sigkill_mid_turn_loses_no_confirmed_item(tmp_path: Path, mode: str, kill_after: int) -> None:
    thread_id = f"thread_crash_{mode}_{kill_after}"
    confirmed = _run_and_kill(tmp_path, thread_id, mode, kill_after)
    assert confirmed, "the child confirmed nothing"
    got = _load_in_new_process(tmp_path, thread_id)

    ids = got["ids"]
    assert set(confirmed) <= set(ids), "a confirmed item is missing after the crash"
    assert ids[: len(confirmed)] == confirmed  # same order; possibly more, appended after our last read
    # SIGKILL can stop the one write() in progress between two pages of the file (Linux checks
    # for a fatal signal there), leaving part of a line no one was told was written: the reader
    # skips that last line, and every confirmed item is whole.
    assert len(got["warnings"]) <= 1 and all("skipped torn last line" in w for w in got["warnings"]), got["warnings"]
    assert got["calls_without_output"] == []  # valid after repair
    assert got["n_after_repair"] == got["n_items"] + len(got["repairs"])
    for r in got["repairs"]:
        assert r["status"] == "aborted" and r["is_error"] and r["output"].startswith("aborted")
    if mode == "hang":
        assert len(got["repairs"]) == 1 and got["open_turn"] is not None
    # The index agrees with the rollout, live (healed by load) and rebuilt from scratch.
    assert got["rebuild_count"] == 1
    assert got["live"] == got["rebuilt"]
    assert got["rebuilt"][0]["items"] == got["n_after_repair"]
    assert got["rebuilt"][0]["name"] == "crashy"
    # The child's secret never reached the disk.
    data = (tmp_path / "threads" / f"{thread_id}.jsonl").read_bytes()
    assert b"sk-child-secret" not in data
