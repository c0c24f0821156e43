"""The cell undo reads each notebook call back from the rollout on disk: a record whose result
or arguments are not what the tools write (not JSON, wrong types, an error, an unknown status)
is left out, and an index or id the notebook does not have reaches the extension only as a
request it refuses, said in the answer; nothing else is touched. A deleted cell's outputs reach
the rollout cut to the cap and redacted, and only outputs of nbformat's shape come back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nbagent.checkpoint.cells import turn_cell_changes, undo_op
from nbagent.protocol import FunctionCall, FunctionCallOutput, Item
from nbagent.store import ThreadStore
from tests.checkpoint.test_undo_cells import BEFORE, Notebook, Turns, delete_in_a_turn


def pair(n: int, name: str, arguments: str, structured: object, *, is_error: bool = False,
         undo: dict[str, Any] | None = None) -> list[Item]:
    call_id = f"call_h{n}"
    return [FunctionCall(turn_id="t1", call_id=call_id, name=name, arguments=arguments),
            FunctionCallOutput(turn_id="t1", call_id=call_id, output="", structured=structured, is_error=is_error,
                               undo=undo)]


HOSTILE: list[Item] = [
    *pair(1, "replace_cell", "not json", {"status": "replaced", "cell_id": "a", "index": 0, "old_source": 5}),
    *pair(2, "delete_cell", "[]", {"status": "deleted", "cell_id": ["a"], "index": 0}),
    *pair(3, "insert_cell", json.dumps({"source": "x"}), "inserted"),
    *pair(4, "insert_cell", json.dumps({"source": "x"}), {"status": "inserted", "cell_id": "a", "index": 0}, is_error=True),
    *pair(5, "move_cell", "{}", {"status": "exploded", "cell_id": "a", "index": 0}),
    *pair(6, "insert_cell", json.dumps({"source": "x", "cell_type": "<script>"}), {"status": "inserted", "cell_id": "a", "index": "0"}),
]


def test_records_that_are_not_what_the_tools_write_are_left_out() -> None:
    changes = turn_cell_changes(HOSTILE, "t1")
    assert [(c.op, c.cell_id, c.before, c.after) for c in changes] == [("replaced", "a", None, None)]


async def test_a_deleted_cell_put_back_at_an_index_out_of_range_is_said_not_restored() -> None:
    notebook = Notebook(BEFORE)
    turns = Turns(notebook)
    turns.items = pair(1, "delete_cell", json.dumps({"cell_id": "zz"}),
                       {"status": "deleted", "cell_id": "zz", "index": 10**9, "old_source": "gone", "cell_type": "raw"})
    op = await undo_op(turns.items, turns.bridge, "t1", force=False, is_notebook=lambda p: False)
    assert notebook.view() == BEFORE
    assert len(op.cells) == 1 and "not restored" in op.cells[0] and "out of range" in op.cells[0]


SECRET = "nbk-9f8e7d6c5b4a39281706"


async def test_a_huge_output_and_one_holding_a_secret_reach_the_rollout_cut_and_redacted(
        openai_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The secret is split across two lines of a stream's text list: joined before it is kept,
    so the redactor finds it whole. The 1.2 MB output is never written; a note takes its place."""
    monkeypatch.setenv("NOTES_API_TOKEN", SECRET)  # a secret by its name
    huge = {"output_type": "display_data", "data": {"text/plain": "y" * 1_200_000}, "metadata": {}}
    leak = {"output_type": "stream", "name": "stdout", "text": [f"leaked {SECRET[:9]}", f"{SECRET[9:]}\n"]}
    after = {"output_type": "stream", "name": "stdout", "text": "done\n"}
    notebook = Notebook(BEFORE, {"c": [huge, leak, after]})
    thread, _ = await delete_in_a_turn(openai_server, tmp_path, notebook, "c")
    with ThreadStore(tmp_path / "home") as store:
        written = store.path_for(thread).read_bytes()
        resumed = store.load(thread).items
    assert SECRET[9:].encode() not in written and b"[redacted]" in written and len(written) < 100_000
    assert "leaked" not in json.dumps(openai_server.requests)
    turns = Turns(notebook)
    turns.items = list(resumed)
    (said,) = await turns.undo()
    assert "1 of 3 too large to have been kept" in said
    note, redacted, last = notebook.cell("print(x)")["outputs"]
    assert "an output of 1,200,0" in note["text"] and "not kept for undo" in note["text"]
    assert redacted["text"] == "leaked [redacted]\n" and last == after


async def test_outputs_not_of_nbformats_shape_in_the_rollout_do_not_come_back() -> None:
    notebook = Notebook(BEFORE)
    turns = Turns(notebook)
    deleted = {"status": "deleted", "cell_id": "zz", "index": 0, "old_source": "gone", "cell_type": "code"}
    shown = {"output_type": "stream", "name": "stdout", "text": "kept"}
    turns.items = [
        *pair(1, "delete_cell", "{}", deleted, undo={"outputs": "not a list", "execution_count": True}),
        *pair(2, "delete_cell", "{}", {**deleted, "old_source": "also gone"},
              undo={"outputs": [5, {"output_type": "<script>"}, shown]}),
    ]
    await turns.undo("t1")
    first, second = notebook.cell("gone"), notebook.cell("also gone")
    assert (first["outputs"], first["execution_count"], second["outputs"]) == ([], None, [shown])
