"""Corrupt rollouts and a hostile index never lose a thread silently nor lead outside the home.

- A rollout whose first line (the thread's meta) is garbage is rebuilt from its other lines, with
  a warning naming the file.
- An index of another schema is rebuilt, not read as "no threads".
- An index row whose rollout path leaves ``$NBAGENT_HOME`` (absolute elsewhere, ``../``, a symlink
  out) is ignored with a warning: nothing outside the home is read as a thread or appended to.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from nbagent.store import ThreadStore
from tests.security.store_env import nbagent

REPLAY = "replay:" + str(Path(__file__).resolve().parents[1] / "fixtures" / "replay_hello.json")


def thread_with_two_turns(home: Path) -> str:
    first = nbagent("run", "-m", REPLAY, "--json", "one", home=home)
    assert first.returncode == 0, first.stderr
    thread_id = json.loads(first.stdout.splitlines()[0])["thread_id"]
    again = nbagent("resume", "-m", REPLAY, thread_id, "two", home=home)
    assert again.returncode == 0, again.stderr
    return thread_id


GARBAGE_FIRST_LINES = {
    "binary": b"\x00\xff\xfegarbage{{{",
    "torn": b'{"type":"thread_meta","thread_id":"thr',
    "not a meta": b'{"type":"thread_meta"}',
    "another type": b'{"type":"surprise","thread_id":"x"}',
    "empty object": b"{}",
    "json list": b"[1, 2, 3]",
}


@pytest.mark.parametrize("garbage", list(GARBAGE_FIRST_LINES), ids=list(GARBAGE_FIRST_LINES))
def test_a_garbage_first_line_loses_the_meta_not_the_thread(tmp_path: Path, garbage: str) -> None:
    home = tmp_path / "home"
    thread_id = thread_with_two_turns(home)
    rollout = home / "threads" / f"{thread_id}.jsonl"
    lines = rollout.read_bytes().split(b"\n")
    rollout.write_bytes(b"\n".join([GARBAGE_FIRST_LINES[garbage], *lines[1:]]))
    (home / "state.sqlite").unlink()  # the next command rebuilds the index from the rollouts
    listed = nbagent("threads", "--json", home=home)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [(r["id"], r["turns"], r["last_prompt"]) for r in rows] == [(thread_id, 2, "two")]
    assert f"{rollout}:1" in listed.stderr and "rebuilt from the other lines" in listed.stderr
    resumed = nbagent("resume", "-m", REPLAY, "--json", thread_id, "three", home=home)
    assert resumed.returncode == 0, resumed.stderr
    events = [json.loads(line) for line in resumed.stdout.splitlines()]
    (configured,) = [e for e in events if e["type"] == "session_configured"]
    assert configured["resumed_items"] == 4, events[0]  # two prompts, two answers
    assert any(e["type"] == "warning" and f"{rollout}:1" in e["message"] for e in events)
    loaded = ThreadStore(home).load(thread_id)
    assert [i.text for i in loaded.items if i.type == "user_message"] == ["one", "two", "three"]  # type: ignore[union-attr]


def _other_schema(path: Path, statements: list[str]) -> None:
    path.unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    conn = sqlite3.connect(path)
    for sql in statements:
        conn.execute(sql)
    conn.commit()
    conn.close()


OTHER_SCHEMAS = {
    "other columns": ["CREATE TABLE threads (id TEXT PRIMARY KEY, title TEXT)", "PRAGMA user_version=1"],
    "a column missing": [
        "CREATE TABLE threads (id TEXT PRIMARY KEY, name TEXT, created_at REAL, updated_at REAL, model TEXT, "
        "cwd TEXT, notebook_path TEXT, turns INTEGER, items INTEGER, last_prompt TEXT)",
        "PRAGMA user_version=1",
    ],
    "a view": ["CREATE TABLE t (x)", "CREATE VIEW threads AS SELECT x AS id FROM t", "PRAGMA user_version=1"],
    "newer version": ["CREATE TABLE threads (id TEXT)", "PRAGMA user_version=99"],
    "stale rows": [
        "CREATE TABLE threads (id TEXT PRIMARY KEY, name TEXT, created_at REAL NOT NULL, updated_at REAL NOT NULL, "
        "model TEXT, cwd TEXT, notebook_path TEXT, turns INTEGER, items INTEGER, last_prompt TEXT, rollout_path TEXT)",
        "INSERT INTO threads VALUES ('ghost', NULL, 0, 0, '', '', NULL, 0, 0, NULL, '/nowhere/ghost.jsonl')",
        "PRAGMA user_version=1",
    ],
}


@pytest.mark.parametrize("schema", list(OTHER_SCHEMAS), ids=list(OTHER_SCHEMAS))
def test_an_index_of_another_schema_is_rebuilt(tmp_path: Path, schema: str) -> None:
    home = tmp_path / "home"
    thread_id = thread_with_two_turns(home)
    _other_schema(home / "state.sqlite", OTHER_SCHEMAS[schema])
    listed = nbagent("threads", "--json", home=home)
    assert listed.returncode == 0, listed.stderr
    assert [(r["id"], r["turns"]) for r in json.loads(listed.stdout)] == [(thread_id, 2)]
    text = nbagent("threads", home=home)
    assert thread_id in text.stdout and "no threads" not in text.stdout


def _point_row(home: Path, thread_id: str, path: str) -> None:
    conn = sqlite3.connect(home / "state.sqlite")
    conn.execute("UPDATE threads SET rollout_path=? WHERE id=?", (path, thread_id))
    conn.commit()
    conn.close()


@pytest.mark.parametrize("where", ["absolute", "dot-dot", "symlinked file"])
def test_an_index_row_leading_outside_the_home_is_ignored(tmp_path: Path, where: str) -> None:
    home = tmp_path / "home"
    thread_id = thread_with_two_turns(home)
    rollout = home / "threads" / f"{thread_id}.jsonl"
    outside = tmp_path / "elsewhere" / f"{thread_id}.jsonl"
    outside.parent.mkdir()
    # A look-alike history outside the home, as someone else may plant it.
    planted = rollout.read_bytes().replace(b'"one"', b'"planted prompt"')
    outside.write_bytes(planted)
    if where == "absolute":
        _point_row(home, thread_id, str(outside))
    elif where == "dot-dot":
        _point_row(home, thread_id, str(home / "threads" / ".." / ".." / "elsewhere" / f"{thread_id}.jsonl"))
    else:
        link = home / "threads" / "sub" / f"{thread_id}.jsonl"
        link.parent.mkdir()
        link.symlink_to(outside)
        _point_row(home, thread_id, str(link))
    resumed = nbagent("resume", "-m", REPLAY, "--json", thread_id, "three", home=home)
    assert resumed.returncode == 0, resumed.stderr
    events = [json.loads(line) for line in resumed.stdout.splitlines()]
    assert any(e["type"] == "warning" and "outside" in e["message"] for e in events), events
    assert outside.read_bytes() == planted  # never appended to
    loaded = ThreadStore(home).load(thread_id)
    assert loaded.path == rollout
    assert [i.text for i in loaded.items if i.type == "user_message"] == ["one", "two", "three"]  # type: ignore[union-attr]


def test_a_rollout_symlinked_out_of_the_home_is_not_a_thread(tmp_path: Path) -> None:
    home = tmp_path / "home"
    thread_id = thread_with_two_turns(home)
    rollout = home / "threads" / f"{thread_id}.jsonl"
    outside = tmp_path / "elsewhere" / f"{thread_id}.jsonl"
    outside.parent.mkdir()
    shutil.move(rollout, outside)
    rollout.symlink_to(outside)
    (home / "state.sqlite").unlink()
    before = outside.read_bytes()
    listed = nbagent("threads", "--json", home=home)
    assert json.loads(listed.stdout) == [] and "outside" in listed.stderr
    resumed = nbagent("resume", "-m", REPLAY, thread_id, "three", home=home)
    assert resumed.returncode != 0 and "Traceback" not in resumed.stderr
    assert outside.read_bytes() == before


@pytest.mark.parametrize("how", ["copy", "planted"])
def test_a_rollout_naming_another_thread_never_takes_over_that_threads_history(tmp_path: Path, how: str) -> None:
    """A copy of a rollout (a backup, a fork) or a planted file whose meta names a thread is read
    as the thread its file name says: the original keeps its index row, and a resume of it reads
    and appends to its own file."""
    home = tmp_path / "home"
    thread_id = thread_with_two_turns(home)
    rollout = home / "threads" / f"{thread_id}.jsonl"
    other = home / "threads" / "thread_other.jsonl"
    text = rollout.read_bytes()
    other.write_bytes(text if how == "copy" else text.replace(b'"one"', b'"planted prompt"'))
    before = other.read_bytes()
    read = nbagent("export", "replay", "thread_other", "-o", str(tmp_path / "x.json"), home=home)
    assert read.returncode == 0, read.stderr
    assert f"names thread '{thread_id}'" in read.stderr and "read as thread 'thread_other'" in read.stderr
    resumed = nbagent("resume", "-m", REPLAY, thread_id, "three", home=home)
    assert resumed.returncode == 0, resumed.stderr
    assert other.read_bytes() == before  # never appended to
    loaded = ThreadStore(home).load(thread_id)
    assert loaded.path == rollout
    assert [i.text for i in loaded.items if i.type == "user_message"] == ["one", "two", "three"]  # type: ignore[union-attr]
    listed = json.loads(nbagent("threads", "--json", home=home).stdout)
    assert sorted(r["id"] for r in listed) == sorted([thread_id, "thread_other"])
