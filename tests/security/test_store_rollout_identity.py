"""A thread is resumed only from its own rollout: ``threads/<id>.jsonl``, a regular file whose
first line is that thread's meta.

An index row that points at another thread's file is not trusted (the thread's own file is
used); a rollout replaced by a symbolic link to another thread's, or a file at the thread's name
whose meta names another thread, is refused with a message naming the thread and the file, and
nothing is appended anywhere.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.security.store_env import nbagent
from tests.security.test_store_corrupt import REPLAY, thread_with_two_turns


def _other_thread(home: Path) -> str:
    made = nbagent("run", "-m", REPLAY, "--json", "bee", home=home)
    assert made.returncode == 0, made.stderr
    return str(json.loads(made.stdout.splitlines()[0])["thread_id"])


def _prompts(path: Path) -> list[str]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [ln["item"]["text"] for ln in lines if ln.get("type") == "item" and ln["item"]["type"] == "user_message"]


def test_an_index_row_pointing_at_another_threads_rollout_is_not_followed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    mine = thread_with_two_turns(home)
    other = _other_thread(home)
    theirs = home / "threads" / f"{other}.jsonl"
    before = theirs.read_bytes()
    conn = sqlite3.connect(home / "state.sqlite")
    conn.execute("UPDATE threads SET rollout_path=? WHERE id=?", (str(theirs), mine))
    conn.commit()
    conn.close()
    resumed = nbagent("resume", "-m", REPLAY, "--json", mine, "three", home=home)
    assert resumed.returncode == 0, resumed.stderr
    events = [json.loads(line) for line in resumed.stdout.splitlines()]
    (configured,) = [e for e in events if e["type"] == "session_configured"]
    assert configured["thread_id"] == mine and configured["resumed_items"] == 4, configured
    assert any(e["type"] == "warning" and mine in e["message"] and str(theirs) in e["message"] for e in events), events
    assert theirs.read_bytes() == before  # the other thread is untouched
    assert _prompts(home / "threads" / f"{mine}.jsonl") == ["one", "two", "three"]


@pytest.mark.parametrize("how", ["symlink", "copy"])
def test_a_rollout_that_is_another_threads_is_refused(tmp_path: Path, how: str) -> None:
    """``<mine>.jsonl`` replaced by a link to the other thread's rollout, or by a copy of it (its
    meta names the other thread): resume refuses, naming the thread and the file."""
    home = tmp_path / "home"
    mine = thread_with_two_turns(home)
    other = _other_thread(home)
    rollout, theirs = home / "threads" / f"{mine}.jsonl", home / "threads" / f"{other}.jsonl"
    rollout.unlink()
    if how == "symlink":
        rollout.symlink_to(theirs)
    else:
        rollout.write_bytes(theirs.read_bytes())
    before_theirs, before_mine = theirs.read_bytes(), rollout.read_bytes()
    resumed = nbagent("resume", "-m", REPLAY, mine, "three", home=home)
    assert resumed.returncode != 0, resumed.stdout
    assert "Traceback" not in resumed.stderr
    assert mine in resumed.stderr and str(rollout) in resumed.stderr, resumed.stderr
    assert ("symbolic link" if how == "symlink" else f"names thread {other!r}") in resumed.stderr, resumed.stderr
    assert theirs.read_bytes() == before_theirs and rollout.read_bytes() == before_mine  # nothing appended
    assert rollout.is_symlink() == (how == "symlink")
