"""What a checkpoint takes: outside git, not an environment or a cache folder (what a
``.gitignore`` would leave out), never nbagent's own home inside the workspace, and not an
untracked file over 10 MiB, which is named as not saved instead of copied."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from nbagent.checkpoint import TurnCheckpoint
from nbagent.checkpoint.ghost import MAX_UNTRACKED_BYTES, GhostError
from nbagent.protocol import GhostSnapshot


def checkpoint(ws: Path, home: Path, change: Callable[[Path], object]) -> GhostSnapshot | None:
    async def turn() -> GhostSnapshot | None:
        taken = TurnCheckpoint(ws, home, "thread_s", "turn_1")
        await taken.before_change()
        change(ws)
        return await taken.settle()

    return asyncio.run(turn())


def test_a_plain_workspace_leaves_out_environments_caches_home_and_big_files(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for name in ("a.txt", ".venv/lib/site.py", "__pycache__/m.pyc", "home/sessions/r.jsonl"):
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("before\n")

    def change(w: Path) -> None:
        for name in ("a.txt", ".venv/lib/site.py", "__pycache__/m.pyc", "home/sessions/r.jsonl"):
            (w / name).write_text("after\n")
        (w / "big.bin").write_bytes(b"x" * (MAX_UNTRACKED_BYTES + 1))

    snapshot = checkpoint(ws, ws / "home", change)
    assert snapshot is not None
    assert [c.path for c in snapshot.changes] == ["a.txt"]
    assert snapshot.not_saved == ["big.bin"]


def test_a_workspace_that_is_nbagents_home_is_not_snapshot_into_itself(tmp_path: Path) -> None:
    """Its store lies inside it: each snapshot would copy the ones before, growing every turn."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("before\n")
    with pytest.raises(GhostError, match="nbagent's home"):
        checkpoint(ws, ws, lambda w: (w / "a.txt").write_text("after\n"))
