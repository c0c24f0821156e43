"""The SQLite index: listing, resolving, rebuild agreement, recovery from corruption."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from nbagent.protocol.items import AssistantMessage, UserMessage
from nbagent.protocol.rollout import ItemRecord, NameRecord, ThreadMeta, TurnRecord
from nbagent.store import ThreadNotFound, ThreadStore, ThreadSummary


def _thread(store: ThreadStore, tid: str, name: str | None, prompts: int = 1, at: float | None = None) -> None:
    t0 = at if at is not None else time.time()
    with store.create(ThreadMeta(thread_id=tid, name=name, model="replay:x", cwd="/w", created_at=t0)) as w:
        for i in range(prompts):
            turn = f"turn_{tid}_{i}"
            w.append(TurnRecord(turn_id=turn, status="started", at=t0 + i + 0.1))
            w.append(ItemRecord(item=UserMessage(turn_id=turn, text=f"prompt {i} of {tid}", created_at=t0 + i + 0.2)))
            w.append(ItemRecord(item=AssistantMessage(turn_id=turn, text="ok", created_at=t0 + i + 0.3)))
            w.append(TurnRecord(turn_id=turn, status="completed", at=t0 + i + 0.4))


def _rows(store: ThreadStore) -> list[ThreadSummary]:
    return sorted(store.list_threads(limit=1000), key=lambda s: s.id)


def test_list_newest_first_with_counts(tmp_path: Path) -> None:
    store = ThreadStore(tmp_path)
    _thread(store, "thread_old", "a", prompts=1, at=1000.0)
    _thread(store, "thread_new", "b", prompts=3, at=2000.0)
    rows = store.list_threads()
    assert [r.id for r in rows] == ["thread_new", "thread_old"]
    new = rows[0]
    assert (new.turns, new.items, new.name, new.model, new.cwd) == (3, 6, "b", "replay:x", "/w")
    assert new.last_prompt == "prompt 2 of thread_new"
    assert new.updated_at == pytest.approx(2002.4)
    assert Path(new.rollout_path) == tmp_path / "threads" / "thread_new.jsonl"
    assert [r.id for r in store.list_threads(limit=1)] == ["thread_new"]


def test_index_updated_at_turn_records_not_every_item(tmp_path: Path) -> None:
    store = ThreadStore(tmp_path)
    w = store.create(ThreadMeta(thread_id="thread_live"))
    w.append(TurnRecord(turn_id="t1", status="started"))
    w.append(ItemRecord(item=UserMessage(text="hi")))
    assert store.list_threads()[0].items == 0  # items are counted at turn end
    w.append(TurnRecord(turn_id="t1", status="completed"))
    assert store.list_threads()[0].items == 1
    w.append(NameRecord(name="renamed"))
    assert store.list_threads()[0].name == "renamed"
    w.close()


def test_resolve_by_id_prefix_and_name(tmp_path: Path) -> None:
    store = ThreadStore(tmp_path)
    _thread(store, "thread_aaa111", "report", at=1000.0)
    _thread(store, "thread_aab222", "report", at=3000.0)
    _thread(store, "thread_bbb333", "other", at=2000.0)
    assert store.resolve("thread_aaa111") == "thread_aaa111"
    assert store.resolve("thread_aaa") == "thread_aaa111"
    assert store.resolve("thread_aa") is None  # ambiguous prefix
    assert store.resolve("thread_b") == "thread_bbb333"
    assert store.resolve("report") == "thread_aab222"  # most recent of that name
    assert store.resolve("other") == "thread_bbb333"
    assert store.resolve("nothing") is None
    assert store.resolve("") is None
    assert store.resolve("../../etc/passwd") is None
    with pytest.raises(ThreadNotFound):
        store.load("thread_zzz")
    with pytest.raises(ValueError):
        store.create(ThreadMeta(thread_id="../escape"))
    with pytest.raises(FileExistsError):
        store.create(ThreadMeta(thread_id="thread_bbb333"))


def test_rename_changes_name_resolution(tmp_path: Path) -> None:
    store = ThreadStore(tmp_path)
    _thread(store, "thread_r", "first")
    with store.open_thread("thread_r")[1] as w:
        w.append(NameRecord(name="second"))
    assert store.resolve("second") == "thread_r"
    assert store.resolve("first") is None
    assert store.load("thread_r").name == "second"


def test_rebuild_agrees_with_live_index(tmp_path: Path) -> None:
    store = ThreadStore(tmp_path)
    for i in range(5):
        _thread(store, f"thread_{i}", f"n{i % 2}", prompts=i + 1, at=1000.0 + i)
    with store.open_thread("thread_3")[1] as w:  # resume appends more
        w.append(TurnRecord(turn_id="more", status="started"))
        w.append(ItemRecord(item=UserMessage(text="resumed")))
        w.append(TurnRecord(turn_id="more", status="aborted", reason="interrupted"))
    live = _rows(store)
    assert store.rebuild_index() == 5
    assert _rows(store) == live
    # A fresh store on the same home, with the index file deleted, agrees too.
    store.close()
    for p in tmp_path.glob("state.sqlite*"):
        p.unlink()
    again = ThreadStore(tmp_path)
    assert _rows(again) == live


def test_corrupt_sqlite_is_rebuilt_with_a_warning(tmp_path: Path) -> None:
    store = ThreadStore(tmp_path)
    _thread(store, "thread_c1", "c")
    _thread(store, "thread_c2", None)
    live = _rows(store)
    store.close()
    for p in tmp_path.glob("state.sqlite-*"):
        p.unlink()
    (tmp_path / "state.sqlite").write_bytes(b"this is definitely not sqlite" * 100)
    again = ThreadStore(tmp_path)
    assert any("index unusable" in w for w in again.warnings)
    assert _rows(again) == live
    assert again.resolve("c") == "thread_c1"
    assert (tmp_path / "state.sqlite.corrupt").exists()
    with sqlite3.connect(tmp_path / "state.sqlite") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_stale_index_found_by_scanning(tmp_path: Path) -> None:
    store = ThreadStore(tmp_path)
    _thread(store, "thread_known", "known")
    # Another process wrote a thread whose index update never happened.
    other = tmp_path / "elsewhere"
    ThreadStore(other).create(ThreadMeta(thread_id="thread_ghost", name="ghost")).close()
    (other / "threads" / "thread_ghost.jsonl").rename(tmp_path / "threads" / "thread_ghost.jsonl")
    assert store.resolve("ghost") == "thread_ghost"
    assert store.resolve("thread_gh") == "thread_ghost"
    assert {r.id for r in store.list_threads()} == {"thread_known", "thread_ghost"}
    # A deleted rollout disappears from the list.
    (tmp_path / "threads" / "thread_known.jsonl").unlink()
    assert [r.id for r in store.list_threads()] == ["thread_ghost"]
    assert store.resolve("known") is None


def test_missing_or_ill_formed_home_is_created(tmp_path: Path) -> None:
    home = tmp_path / "deep" / "home"
    store = ThreadStore(home)
    assert (home / "threads").is_dir()
    assert store.list_threads() == []
    assert store.rebuild_index() == 0
    # A rollout without a meta line is skipped, never fatal.
    (home / "threads" / "thread_empty.jsonl").write_bytes(b"")
    (home / "threads" / "thread_junk.jsonl").write_bytes(b"junk\n")
    assert store.rebuild_index() == 0
    assert store.list_threads() == []
