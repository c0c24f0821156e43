"""A turn (or an outside agent's call) that changes nothing in the workspace starts no git
process: the kernel's file events say so. A change of any kind, by the turn or by the person
between turns, in any folder (one created since, one moved in), is still seen, and the next
turn's snapshot is taken anew, so undo never puts back what a person wrote between turns."""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from nbagent.checkpoint import TurnCheckpoint, watch
from nbagent.protocol import GhostSnapshot

GIT = shutil.which("git")


@pytest.fixture
def git_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every git command the checkpoint starts, one line each, through a real git."""
    shim, log = tmp_path / "bin", tmp_path / "git.log"
    shim.mkdir()
    (shim / "git").write_text(f'#!/bin/sh\necho "$1 $2 $3" >> {log}\nexec {GIT} "$@"\n')
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    log.touch()
    return log


class Turns:
    """Turns of one thread on one workspace, each changing what ``change`` does."""

    def __init__(self, ws: Path, home: Path) -> None:
        self.ws, self.home, self.count = ws, home, 0

    def run(self, change: Callable[[Path], object] = lambda ws: None) -> GhostSnapshot | None:
        self.count += 1

        async def turn() -> GhostSnapshot | None:
            taken = TurnCheckpoint(self.ws, self.home, "thread_w", f"turn_{self.count}")
            await taken.before_change()
            change(self.ws)
            return await taken.settle()

        return asyncio.run(turn())


def changed(snapshot: GhostSnapshot | None) -> list[str]:
    return [] if snapshot is None else sorted(c.path for c in snapshot.changes)


def workspace(tmp_path: Path, *, git: bool) -> Turns:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    for name in ("a.txt", "b.txt", "sub/c.txt"):
        (ws / name).write_text(f"{name} before\n")
    if git:
        env = {**os.environ, "GIT_AUTHOR_NAME": "p", "GIT_AUTHOR_EMAIL": "p@x", "GIT_COMMITTER_NAME": "p",
               "GIT_COMMITTER_EMAIL": "p@x"}  # fmt: skip
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
            subprocess.run([GIT or "git", *args], cwd=ws, env=env, check=True)
    return Turns(ws, tmp_path / "home")


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
def test_turns_that_change_nothing_start_no_git_and_a_later_change_is_still_seen(tmp_path: Path, git_log: Path,
                                                                                 git: bool) -> None:  # fmt: skip
    turns = workspace(tmp_path, git=git)
    assert changed(turns.run(lambda ws: (ws / "a.txt").write_text("first turn\n"))) == ["a.txt"]
    turns.run()  # the first quiet turn snapshots what the last one left
    started = len(git_log.read_text().splitlines())
    for _ in range(3):
        assert turns.run() is None
    assert len(git_log.read_text().splitlines()) == started, git_log.read_text()

    assert changed(turns.run(lambda ws: (ws / "sub" / "c.txt").write_text("changed\n"))) == ["sub/c.txt"]


CHANGES: dict[str, Callable[[Path], object]] = {
    "edit": lambda ws: (ws / "b.txt").write_text("edited\n"),
    "same size, same second": lambda ws: (ws / "b.txt").write_text("b.txt BEFORE\n"),
    "delete": lambda ws: (ws / "b.txt").unlink(),
    "rename": lambda ws: (ws / "b.txt").rename(ws / "sub" / "b2.txt"),
    "made executable": lambda ws: (ws / "b.txt").chmod((ws / "b.txt").stat().st_mode | stat.S_IXUSR),
    "new folder": lambda ws: ((ws / "new" / "deep").mkdir(parents=True), (ws / "new" / "deep" / "d.txt").write_text("x\n")),
    "folder moved in": lambda ws: (ws.parent / "outside").rename(ws / "moved"),
    "symlink": lambda ws: (ws / "link").symlink_to("a.txt"),
}


@pytest.mark.parametrize("how", list(CHANGES))
def test_what_a_person_changes_between_turns_is_never_taken_for_the_turns_own(tmp_path: Path, how: str) -> None:
    """A person's change between two quiet turns is in the next turn's before-snapshot: the
    turn that then changes a.txt records a.txt only, so undoing it keeps the person's work."""
    turns = workspace(tmp_path, git=False)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "e.txt").write_text("moved in\n")
    turns.run()
    turns.run()
    CHANGES[how](turns.ws)
    assert changed(turns.run(lambda ws: (ws / "a.txt").write_text("the turn\n"))) == ["a.txt"]


def test_a_file_written_in_a_folder_made_by_an_earlier_turn_is_seen(tmp_path: Path) -> None:
    turns = workspace(tmp_path, git=True)
    assert changed(turns.run(lambda ws: ((ws / "made").mkdir(), (ws / "made" / "f.txt").write_text("1\n")))) == ["made/f.txt"]
    assert turns.run() is None
    assert changed(turns.run(lambda ws: (ws / "made" / "f.txt").write_text("2\n"))) == ["made/f.txt"]


def test_a_workspace_with_too_many_folders_to_watch_asks_git_every_time(tmp_path: Path, git_log: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setattr(watch, "MAX_FOLDERS", 1)
    turns = workspace(tmp_path, git=False)
    turns.run()
    started = len(git_log.read_text().splitlines())
    assert turns.run() is None
    assert len(git_log.read_text().splitlines()) > started
    assert changed(turns.run(lambda ws: (ws / "sub" / "c.txt").write_text("changed\n"))) == ["sub/c.txt"]


def inotify_instances() -> int:
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if os.path.exists(fd) and os.readlink(fd) == "anon_inode:inotify")


def test_a_process_watches_few_workspaces_and_one_no_longer_watched_still_sees_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each watched folder counts against the user's limit, shared with every editor and tool:
    opening more workspaces than ``MAX_WATCHED`` closes the least recently used watcher, and that
    workspace's next snapshot asks git, so a change there is still recorded."""
    monkeypatch.setattr(watch, "MAX_WATCHED", 2)
    before = inotify_instances()
    turns = workspace(tmp_path, git=False)
    turns.run()
    for name in ("second", "third", "fourth"):
        (tmp_path / name).mkdir()
        Turns(tmp_path / name, tmp_path / "home").run()
    assert inotify_instances() - before <= 2
    assert changed(turns.run(lambda ws: (ws / "a.txt").write_text("after\n"))) == ["a.txt"]


def test_a_folder_linking_back_to_the_workspace_is_not_walked_into(tmp_path: Path, git_log: Path) -> None:
    """A workspace someone else made may hold links that loop (``sub/back -> ..``): the watcher
    does not follow them, so it neither walks forever nor gives up and leaves every quiet turn
    to git."""
    turns = workspace(tmp_path, git=False)
    (turns.ws / "sub" / "back").symlink_to("..", target_is_directory=True)
    (turns.ws / "up").symlink_to(turns.ws, target_is_directory=True)
    turns.run()
    turns.run()
    started = len(git_log.read_text().splitlines())
    assert turns.run() is None
    assert len(git_log.read_text().splitlines()) == started
    assert changed(turns.run(lambda ws: (ws / "sub" / "c.txt").write_text("changed\n"))) == ["sub/c.txt"]
