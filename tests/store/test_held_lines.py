"""A held rollout line (``RolloutWriter.hold``) goes out in the same write as the next line,
before it, redacted like any line and told to the index; closing writes it; a full disk at
close loses it with a log line, never an exception."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from nbagent.protocol.items import UserMessage
from nbagent.protocol.rollout import ItemRecord, RolloutLine, ThreadMeta, TurnRecord
from nbagent.store import REDACTED, RolloutWriteError, RolloutWriter, ThreadStore, read_rollout
from nbagent.store import rollout as rollout_module


def kinds(path: Path) -> list[str]:
    lines, warnings = read_rollout(path)
    assert warnings == []
    return [f"{line.type}:{getattr(line, 'status', '')}" for line in lines]


def test_a_held_line_is_written_first_in_the_next_lines_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.jsonl"
    told: list[RolloutLine] = []
    writes: list[bytes] = []
    real_write = os.write

    def counted(fd: int, data: bytes) -> int:
        writes.append(bytes(data))
        return real_write(fd, data)

    with RolloutWriter(path, on_line=lambda line, data: told.append(line), create=True) as writer:
        writer.append(ThreadMeta(thread_id="t"))
        writer.hold(TurnRecord(turn_id="a", status="started", entry="notebook_server"))
        assert kinds(path) == ["thread_meta:"] and len(told) == 1  # not on disk, not indexed yet
        monkeypatch.setattr(rollout_module.os, "write", counted)
        writer.append(TurnRecord(turn_id="a", status="completed", entry="notebook_server"))
        monkeypatch.undo()
    assert len(writes) == 1 and writes[0].count(b"\n") == 2
    assert kinds(path) == ["thread_meta:", "turn:started", "turn:completed"]
    assert [getattr(line, "status", None) for line in told] == [None, "started", "completed"]


def test_held_lines_keep_their_order_and_close_writes_them(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with RolloutWriter(path, create=True) as writer:
        writer.append(ThreadMeta(thread_id="t"))
        writer.hold(TurnRecord(turn_id="a", status="started"))
        writer.hold(TurnRecord(turn_id="b", status="started"))
        writer.append_item(UserMessage(text="between"))
        writer.hold(TurnRecord(turn_id="b", status="completed"))
    lines, _ = read_rollout(path)
    assert [(line.type, getattr(line, "turn_id", None)) for line in lines] == [
        ("thread_meta", None), ("turn", "a"), ("turn", "b"), ("item", None), ("turn", "b")
    ]


def test_a_held_line_is_redacted_and_indexed_as_written(tmp_path: Path) -> None:
    store = ThreadStore(tmp_path)
    writer = store.create(ThreadMeta(thread_id="thread_h", name="h"), secrets=["sk-held-secret"])
    writer.hold(TurnRecord(turn_id="turn_1", status="started", entry="notebook_server", reason="sk-held-secret"))
    writer.append(TurnRecord(turn_id="turn_1", status="completed", entry="notebook_server"))
    writer.close()
    text = (tmp_path / "threads" / "thread_h.jsonl").read_text()
    assert "sk-held-secret" not in text and REDACTED in text
    assert [t.turns for t in store.list_threads()] == [1]


def test_a_full_disk_at_close_loses_the_held_line_without_raising(caplog: pytest.LogCaptureFixture) -> None:
    writer = RolloutWriter(Path("/dev/full"))
    writer.hold(ItemRecord(item=UserMessage(text="held")))
    with pytest.raises(RolloutWriteError, match="/dev/full"):
        writer.append(ItemRecord(item=UserMessage(text="next")))
    with caplog.at_level(logging.ERROR, logger="nbagent.store.rollout"):
        writer.close()
    assert writer.closed and "held rollout line(s) lost at close of /dev/full" in caplog.text
