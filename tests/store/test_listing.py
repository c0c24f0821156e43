"""Listing answered by the index: right after another process adds a thread, a rollout is deleted
or moved, the index is rebuilt or was written by a version that kept no scan record; loading a
thread leaves the garbage collector as it found it."""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nbagent.protocol.items import UserMessage
from nbagent.protocol.rollout import ItemRecord, ThreadMeta, TurnRecord
from nbagent.store import ThreadStore, read_rollout
from tests.store.samples import every_item

ANOTHER_PROCESS = """
import sys
from nbagent.protocol.items import UserMessage
from nbagent.protocol.rollout import ItemRecord, ThreadMeta
from nbagent.store import ThreadStore
with ThreadStore(sys.argv[1]) as store, store.create(ThreadMeta(thread_id=sys.argv[2])) as w:
    w.append(ItemRecord(item=UserMessage(text="from another process")))
"""


def _thread(store: ThreadStore, tid: str, at: float) -> None:
    with store.create(ThreadMeta(thread_id=tid, created_at=at)) as w:
        w.append(TurnRecord(turn_id=f"turn_{tid}", status="started", at=at))
        w.append(ItemRecord(item=UserMessage(turn_id=f"turn_{tid}", text=f"prompt of {tid}", created_at=at)))
        w.append(TurnRecord(turn_id=f"turn_{tid}", status="completed", at=at))


def _settled(store: ThreadStore, *dirs: Path) -> list[str]:
    """List once with every directory's time well in the past, so the index records the scan as
    current and the next listing is answered from the index unless something changed."""
    old = time.time_ns() - 60 * 10**9
    for d in (store.threads_dir, *dirs):
        os.utime(d, ns=(old, old))
    return _ids(store)


def _ids(store: ThreadStore) -> list[str]:
    return sorted(r.id for r in store.list_threads(limit=1000))


@pytest.fixture
def store(tmp_path: Path) -> ThreadStore:
    s = ThreadStore(tmp_path / "home")
    for i in range(3):
        _thread(s, f"thread_{i}", 1000.0 + i)
    return s


def test_a_thread_another_process_adds_is_listed(store: ThreadStore) -> None:
    assert _settled(store) == ["thread_0", "thread_1", "thread_2"]
    subprocess.run([sys.executable, "-c", ANOTHER_PROCESS, str(store.home), "thread_other"], check=True, timeout=120)
    rows = store.list_threads()
    assert rows[0].id == "thread_other" and rows[0].first_prompt == "from another process"
    assert len(rows) == 4


def test_a_rollout_copied_in_without_its_index_row_is_listed(store: ThreadStore, tmp_path: Path) -> None:
    _settled(store)
    elsewhere = ThreadStore(tmp_path / "elsewhere")
    _thread(elsewhere, "thread_ghost", 2000.0)
    (elsewhere.threads_dir / "thread_ghost.jsonl").rename(store.threads_dir / "thread_ghost.jsonl")
    assert _ids(store) == ["thread_0", "thread_1", "thread_2", "thread_ghost"]
    assert store.resolve("thread_gh") == "thread_ghost"


def test_a_deleted_or_moved_rollout_leaves_the_listing(store: ThreadStore, tmp_path: Path) -> None:
    _settled(store)
    (store.threads_dir / "thread_0.jsonl").unlink()
    assert _ids(store) == ["thread_1", "thread_2"]
    _settled(store)
    (store.threads_dir / "thread_1.jsonl").rename(tmp_path / "thread_1.jsonl")  # out of the home
    assert _ids(store) == ["thread_2"]
    assert store.resolve("thread_1") is None


def test_a_change_inside_a_subdirectory_is_seen(store: ThreadStore) -> None:
    sub = store.threads_dir / "archive"
    sub.mkdir()
    (store.threads_dir / "thread_2.jsonl").rename(sub / "thread_2.jsonl")
    assert _settled(store, sub) == ["thread_0", "thread_1", "thread_2"]
    (sub / "thread_2.jsonl").unlink()  # only the subdirectory's time changes
    assert _ids(store) == ["thread_0", "thread_1"]


def test_rebuild_then_another_process_adds_a_thread(store: ThreadStore) -> None:
    old = time.time_ns() - 60 * 10**9
    os.utime(store.threads_dir, ns=(old, old))
    assert store.rebuild_index() == 3
    subprocess.run([sys.executable, "-c", ANOTHER_PROCESS, str(store.home), "thread_late"], check=True, timeout=120)
    (store.threads_dir / "thread_0.jsonl").unlink()
    assert _ids(store) == ["thread_1", "thread_2", "thread_late"]


def test_an_index_without_a_scan_record_is_used_as_it_is(store: ThreadStore) -> None:
    """An index written by an earlier version: its rows stay (no rebuild), the files are scanned."""
    store.close()
    index = store.home / "state.sqlite"
    with sqlite3.connect(index) as conn:
        conn.execute("DROP TABLE scanned")
        conn.execute("UPDATE threads SET first_prompt='as the index had it' WHERE id='thread_1'")
    (store.threads_dir / "thread_0.jsonl").unlink()
    again = ThreadStore(store.home)
    rows = {r.id: r for r in again.list_threads()}
    assert sorted(rows) == ["thread_1", "thread_2"]
    assert rows["thread_1"].first_prompt == "as the index had it"  # not rebuilt
    assert again.warnings == []


def test_a_hostile_scan_record_never_hides_a_rollout(store: ThreadStore) -> None:
    """Whatever ``scanned`` says (forged times, a view), a rollout added since is listed."""
    store.close()
    st = os.stat(store.threads_dir)
    with sqlite3.connect(store.home / "state.sqlite") as conn:
        conn.execute("DROP TABLE scanned")
        forged = (str(store.threads_dir).replace("'", "''"), st.st_dev, st.st_ino, st.st_mtime_ns)
        conn.execute("CREATE VIEW scanned AS SELECT '{}' AS dir, {} AS dev, {} AS ino, {} AS mtime_ns".format(*forged))
    _thread(ThreadStore(store.home / "x"), "thread_new", 3000.0)
    (store.home / "x" / "threads" / "thread_new.jsonl").rename(store.threads_dir / "thread_new.jsonl")
    assert _ids(ThreadStore(store.home)) == ["thread_0", "thread_1", "thread_2", "thread_new"]


def test_resume_gives_every_line_as_written_with_the_same_warnings(tmp_path: Path) -> None:
    """Thousands of items of every type, garbage, blank lines and a torn tail: the items are those
    of a line-by-line read, and each bad line is named by file and number."""
    store = ThreadStore(tmp_path)
    items = every_item() * 300
    with store.create(ThreadMeta(thread_id="thread_big")) as w:
        for item in items:
            w.append(ItemRecord(item=item))
    path = store.threads_dir / "thread_big.jsonl"
    raw = path.read_bytes().split(b"\n")[:-1]
    raw.insert(10, b"not json at all")
    raw.insert(20, b"   ")
    raw.insert(30, json.dumps({"type": "item", "item": {"type": "nope"}}).encode())
    path.write_bytes(b"\n".join(raw) + b"\n" + b'{"type":"item","item":{"type":"user_mess')
    loaded = store.load("thread_big")
    assert loaded.items == items
    assert [w.split(": skipped ")[0] for w in loaded.warnings] == [f"{path}:11", f"{path}:31", f"{path}:{len(raw) + 1}"]
    assert "torn last line" in loaded.warnings[-1]


@pytest.mark.parametrize("enabled", [True, False])
def test_loading_leaves_the_collector_as_it_found_it(tmp_path: Path, enabled: bool) -> None:
    with ThreadStore(tmp_path).create(ThreadMeta(thread_id="t")) as w:
        for item in every_item():
            w.append(ItemRecord(item=item))
    frozen_before = gc.get_freeze_count()
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        lines, warnings = read_rollout(tmp_path / "threads" / "t.jsonl")
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
    assert len(lines) == 1 + len(every_item()) and warnings == []
    assert gc.get_freeze_count() == frozen_before


def test_objects_someone_froze_stay_frozen(tmp_path: Path) -> None:
    with ThreadStore(tmp_path).create(ThreadMeta(thread_id="t")) as w:
        w.append(ItemRecord(item=UserMessage(text="x")))
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        read_rollout(tmp_path / "threads" / "t.jsonl")
        # Frozen objects may still be freed by their refcount while it reads (the count drops a
        # little in a long process); an unfreeze would have left none frozen at all.
        assert gc.get_freeze_count() > frozen // 2
    finally:
        gc.unfreeze()
