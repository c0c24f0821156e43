"""Rollout files: round trip, torn and garbage lines, redaction."""

from __future__ import annotations

import json
from pathlib import Path

from nbagent.protocol.items import FunctionCallOutput, UserMessage
from nbagent.protocol.rollout import ItemRecord, NameRecord, ThreadMeta, TurnRecord
from nbagent.secrets import REDACTED
from nbagent.store import RolloutWriter, ThreadStore, read_rollout
from tests.store.samples import every_item


def _write_thread(path: Path, n_items: int = 5) -> list[UserMessage]:
    items = [UserMessage(text=f"message {i}") for i in range(n_items)]
    with RolloutWriter(path, create=True) as w:
        w.append(ThreadMeta(thread_id="t"))
        for it in items:
            w.append(ItemRecord(item=it))
    return items


def test_every_item_type_round_trips(tmp_path: Path) -> None:
    store = ThreadStore(tmp_path)
    meta = ThreadMeta(thread_id="thread_rt", name="rt", model="m", cwd="/c", notebook_path="n.ipynb")
    items = every_item()
    turns = [
        TurnRecord(turn_id="turn_1", status="started", entry="magic", model="m", policy="never"),
        TurnRecord(turn_id="turn_1", status="completed", reason=None),
    ]
    with store.create(meta) as w:
        w.append(turns[0])
        for it in items:
            w.append(ItemRecord(item=it))
        w.append(turns[1])
        w.append(NameRecord(name="renamed"))
    loaded = store.load("thread_rt")
    assert loaded.meta == meta
    assert loaded.items == items
    assert [type(i) for i in loaded.items] == [type(i) for i in items]
    assert loaded.turns == turns
    assert loaded.name == "renamed"
    assert loaded.warnings == []
    assert loaded.open_turn_id is None


def test_latest_name_wins_and_open_turn(tmp_path: Path) -> None:
    store = ThreadStore(tmp_path)
    with store.create(ThreadMeta(thread_id="thread_n", name="a")) as w:
        w.append(NameRecord(name="b"))
        w.append(NameRecord(name="c"))
        w.append(TurnRecord(turn_id="turn_x", status="started"))
    loaded = store.load("thread_n")
    assert loaded.name == "c"
    assert loaded.open_turn_id == "turn_x"


def test_torn_last_line_skipped_with_warning(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    items = _write_thread(path)
    half = ItemRecord(item=UserMessage(text="never finished")).model_dump_json()
    with open(path, "ab") as f:
        f.write(half[: len(half) // 2].encode())
    lines, warnings = read_rollout(path)
    assert [ln.item for ln in lines[1:]] == items  # type: ignore[union-attr]
    assert len(warnings) == 1
    assert str(path) in warnings[0] and ":7:" in warnings[0] and "torn last line" in warnings[0]


def test_append_after_torn_tail_keeps_new_lines_intact(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    items = _write_thread(path)
    with open(path, "ab") as f:
        f.write(b'{"type":"item","item":{"id"')
    extra = UserMessage(text="after the crash")
    with RolloutWriter(path) as w:
        w.append(ItemRecord(item=extra))
    lines, warnings = read_rollout(path)
    assert [ln.item for ln in lines[1:]] == [*items, extra]  # type: ignore[union-attr]
    assert len(warnings) == 1 and ":7:" in warnings[0]


def test_garbage_in_the_middle_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    items = _write_thread(path)
    raw = path.read_bytes().split(b"\n")
    raw.insert(3, b"this is not json")
    raw.insert(5, json.dumps({"type": "item", "item": {"type": "nope"}}).encode())
    raw.insert(6, b"")  # blank lines are ignored silently
    path.write_bytes(b"\n".join(raw))
    lines, warnings = read_rollout(path)
    assert [ln.item for ln in lines[1:]] == items  # type: ignore[union-attr]
    assert len(warnings) == 2
    assert warnings[0].startswith(f"{path}:4: skipped invalid line")
    assert warnings[1].startswith(f"{path}:6: skipped invalid line")


def test_secrets_never_reach_the_file(tmp_path: Path) -> None:
    key = "sk-test-0123456789abcdef"
    token = 'Bearer tok"en\\with/escapes'
    env_value = "hunter2-env-value"
    store = ThreadStore(tmp_path)
    meta = ThreadMeta(thread_id="thread_sec", name=f"name {key}", cwd=f"/home/{env_value}")
    with store.create(meta, secrets=[key, token, env_value, "", "ab", "abcdefg"]) as w:
        w.append(ItemRecord(item=UserMessage(text=f"my key is {key}")))
        w.append(ItemRecord(item=UserMessage(text="short (ab, abcdefg) strings stay")))
        w.append(ItemRecord(item=
            FunctionCallOutput(
                call_id="c", output=f"Authorization: {token}", structured={key: [env_value]}, content=[]
            )
        ))
        # A secret equal to a structural value must not make the line unreadable.
        w.append(TurnRecord(turn_id="turn_1", status="completed", reason="x"))
    data = (tmp_path / "threads" / "thread_sec.jsonl").read_bytes()
    for secret in (key, token, env_value):
        assert secret.encode() not in data
        assert json.dumps(secret)[1:-1].encode() not in data
    assert b"(ab, abcdefg)" in data  # shorter than 8: not a secret
    loaded = store.load("thread_sec")
    assert loaded.warnings == []
    assert loaded.items[0].text == f"my key is {REDACTED}"  # type: ignore[union-attr]
    assert loaded.items[2].output == f"Authorization: {REDACTED}"  # type: ignore[union-attr]
    assert loaded.items[2].structured == {REDACTED: [REDACTED]}  # type: ignore[union-attr]
    # The index holds no secret either.
    db = b"".join(p.read_bytes() for p in tmp_path.glob("state.sqlite*"))
    assert key.encode() not in db and env_value.encode() not in db
    (row,) = store.list_threads()
    assert row.name == f"name {REDACTED}" and row.last_prompt == "short (ab, abcdefg) strings stay"


def test_secret_colliding_with_structure_keeps_line_valid(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with RolloutWriter(path, secrets=["user_message", "completed"], create=True) as w:
        w.append(ThreadMeta(thread_id="t"))
        w.append(ItemRecord(item=UserMessage(text="an user_message completed")))
        w.append(TurnRecord(turn_id="x", status="completed"))
    lines, warnings = read_rollout(path)
    assert warnings == []
    assert lines[1].item.text == f"an {REDACTED} {REDACTED}"  # type: ignore[union-attr]
    assert lines[2].status == "completed"  # type: ignore[union-attr]


def test_writer_flushes_every_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    w = RolloutWriter(path, create=True)
    w.append(ThreadMeta(thread_id="t"))
    w.append(ItemRecord(item=UserMessage(text="visible before close")))
    # Another reader sees both lines while the writer is still open.
    lines, warnings = read_rollout(path)
    assert len(lines) == 2 and warnings == []
    w.close()


def test_secrets_may_be_a_generator_and_hooks_cannot_break_appends(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"

    def broken_hook(line: object, data: bytes) -> None:
        raise RuntimeError("index down")

    secrets = (s for s in ["generated-secret"])
    with RolloutWriter(path, secrets=secrets, on_line=broken_hook, create=True) as w:
        w.append(ThreadMeta(thread_id="t"))
        w.append(ItemRecord(item=UserMessage(text="a generated-secret here")))
    data = path.read_bytes()
    assert b"generated-secret" not in data
    lines, warnings = read_rollout(path)
    assert len(lines) == 2 and warnings == []
