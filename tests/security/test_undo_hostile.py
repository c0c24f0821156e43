"""Undo reads its checkpoint back from the rollout on disk: a record naming a path outside the
workspace, through a folder that became a link, or an "id" that is a git option is refused,
naming it, before any file is touched. A file whose name holds a newline is restored as named."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nbagent.checkpoint import TurnCheckpoint, UndoRefused, plan_undo, undo_turn
from nbagent.protocol import FileChange, GhostSnapshot


def snapshot_of(ws: Path, home: Path, change) -> GhostSnapshot:  # noqa: ANN001 - a function of the workspace
    """A real checkpoint of a turn that runs ``change(ws)``."""
    import asyncio

    async def turn() -> GhostSnapshot | None:
        checkpoint = TurnCheckpoint(ws, home, "thread_x", "turn_1")
        await checkpoint.before_change()
        change(ws)
        return await checkpoint.settle()

    snapshot = asyncio.run(turn())
    assert snapshot is not None
    snapshot.turn_id = "turn_1"
    return snapshot


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    return ws


@pytest.mark.parametrize(
    ("path", "named"),
    [("../outside.txt", "outside its workspace"), ("/etc/passwd", "outside its workspace"),
     (".git/config", "outside its workspace")],
)  # fmt: skip
def test_a_path_out_of_the_workspace_is_refused(ws: Path, tmp_path: Path, path: str, named: str) -> None:
    snapshot = snapshot_of(ws, tmp_path / "home", lambda w: (w / "a.txt").write_text("two\n"))
    snapshot.changes.append(FileChange(path=path, before=snapshot.changes[0].before, after=None))
    with pytest.raises(UndoRefused, match=named):
        plan_undo([snapshot])
    assert not (tmp_path / "outside.txt").exists() and (ws / "a.txt").read_text() == "two\n"


def test_an_option_for_an_id_is_refused(ws: Path, tmp_path: Path) -> None:
    snapshot = snapshot_of(ws, tmp_path / "home", lambda w: (w / "a.txt").write_text("two\n"))
    snapshot.changes[0].before = "--output=/tmp/x"
    with pytest.raises(UndoRefused, match="names no content for a.txt"):
        plan_undo([snapshot])


def test_a_folder_that_became_a_link_is_not_written_through(ws: Path, tmp_path: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "f.txt").write_text("kept\n")
    snapshot = snapshot_of(ws, tmp_path / "home", lambda w: (w / "sub" / "f.txt").write_text("changed\n"))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "f.txt").write_text("changed\n")
    subprocess.run(["rm", "-r", str(ws / "sub")], check=True)
    (ws / "sub").symlink_to(outside)
    with pytest.raises(UndoRefused, match="sub/f.txt now lies outside the workspace"):
        plan_undo([snapshot], force=True)
    assert (outside / "f.txt").read_text() == "changed\n"


def test_a_name_with_a_newline_is_restored(ws: Path, tmp_path: Path) -> None:
    odd = "two\nlines.txt"
    (ws / odd).write_text("before\n")
    snapshot = snapshot_of(ws, tmp_path / "home", lambda w: (w / odd).write_text("after\n"))
    undo_turn(plan_undo([snapshot]))
    assert (ws / odd).read_text() == "before\n"
