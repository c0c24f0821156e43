"""A full disk: turns end with an error, lines are whole or absent, the index is not thrown away.

The disk is real: a small tmpfs filled to its last byte (the tests skip where mounting one is not
allowed), or ``/dev/full`` for the writer alone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from nbagent.protocol import ItemRecord, ThreadMeta, UserMessage
from nbagent.store import RolloutWriter, ThreadStore, read_rollout
from tests.security.store_env import fill, nbagent, small_filesystem

REPLAY = "replay:" + str(Path(__file__).resolve().parents[1] / "fixtures" / "replay_hello.json")


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_filesystem(tmp_path / "disk") as where:
        yield where


def whole_lines(path: Path) -> list[bytes]:
    """Every line of a rollout parses and the file ends with a newline (nothing cut mid-way)."""
    data = path.read_bytes()
    assert data.endswith(b"\n"), data[-80:]
    lines = data.splitlines()
    for line in lines:
        json.loads(line)
    return lines


def thread_on(home: Path) -> str:
    first = nbagent("run", "-m", REPLAY, "--json", "hello", home=home)
    assert first.returncode == 0, first.stderr
    return json.loads(first.stdout.splitlines()[0])["thread_id"]


def test_resume_on_a_full_disk_ends_with_an_error_instead_of_hanging(disk: Path) -> None:
    home = disk / "home"
    thread_id = thread_on(home)
    rollout = home / "threads" / f"{thread_id}.jsonl"
    before = whole_lines(rollout)
    fill(disk)
    proc = nbagent("resume", "-m", REPLAY, thread_id, "once more " * 2000, home=home, timeout=60)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    out = proc.stdout + proc.stderr
    assert "No space left on device" in out and str(rollout) in out
    assert "Traceback" not in out
    assert whole_lines(rollout)[: len(before)] == before
    # The index was healthy: it is still there and was not set aside as corrupt.
    assert (home / "state.sqlite").is_file() and not list(home.glob("*.corrupt"))
    (disk / "filler").unlink()
    again = nbagent("resume", "-m", REPLAY, thread_id, "now there is room", home=home)
    assert again.returncode == 0, again.stderr
    listed = json.loads(nbagent("threads", "--json", home=home).stdout)
    assert [t["id"] for t in listed] == [thread_id] and listed[0]["last_prompt"] == "now there is room"


def test_a_failed_run_on_a_full_disk_leaves_no_empty_rollout(disk: Path) -> None:
    home = disk / "home"
    thread_on(home)
    fill(disk)
    proc = nbagent("run", "-m", REPLAY, "hello", home=home, timeout=60)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    err = (proc.stdout + proc.stderr).strip().splitlines()
    assert any("No space left on device" in line for line in err) and "Traceback" not in proc.stderr
    rollouts = list((home / "threads").glob("*.jsonl"))
    assert len(rollouts) == 1 and all(p.stat().st_size > 0 for p in rollouts)


def test_a_short_write_is_cut_back_so_no_line_is_torn(disk: Path) -> None:
    path = disk / "t.jsonl"
    writer = RolloutWriter(path, create=True)
    writer.append(ThreadMeta(thread_id="t"))
    writer.append(ItemRecord(item=UserMessage(text="kept")))
    size = path.stat().st_size
    fill(disk)
    os.truncate(disk / "filler", max(0, (disk / "filler").stat().st_size - 4096))  # one page free
    big = ItemRecord(item=UserMessage(text="x" * 20_000))  # more than the page left: a short write
    with pytest.raises(OSError, match="No space left on device") as info:
        writer.append(big)
    assert str(path) in str(info.value)
    assert path.stat().st_size == size
    (disk / "filler").unlink()
    writer.append(ItemRecord(item=UserMessage(text="after")))
    writer.close()
    lines, warnings = read_rollout(path)
    assert warnings == [] and [ln.item.text for ln in lines[1:]] == ["kept", "after"]  # type: ignore[union-attr]


def test_writing_to_a_full_device_raises_a_clear_error(tmp_path: Path) -> None:
    writer = RolloutWriter(Path("/dev/full"))
    with pytest.raises(OSError, match="No space left on device") as info:
        writer.append(ThreadMeta(thread_id="t"))
    assert "/dev/full" in str(info.value) and "Errno" not in str(info.value)
    writer.close()


def test_a_full_disk_never_sets_a_healthy_index_aside(disk: Path) -> None:
    home = disk / "home"
    thread_id = thread_on(home)
    index = (home / "state.sqlite").read_bytes()
    fill(disk)
    with ThreadStore(home) as store:
        assert [t.id for t in store.list_threads()] == [thread_id]
        assert any("full" in w or "space" in w or "disk" in w for w in store.warnings), store.warnings
    assert (home / "state.sqlite").read_bytes() == index
    assert not list(home.glob("*.corrupt"))
