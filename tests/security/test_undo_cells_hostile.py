"""The cell undo reads each notebook call back from the rollout on disk: a record whose result
or arguments are not what the tools write (not JSON, wrong types, an error, an unknown status)
is left out, and an index or id the notebook does not have reaches the extension only as a
request it refuses, said in the answer; nothing else is touched."""

from __future__ import annotations

import json

from nbagent.checkpoint.cells import turn_cell_changes, undo_op
from nbagent.protocol import FunctionCall, FunctionCallOutput, Item
from tests.checkpoint.test_undo_cells import BEFORE, Notebook, Turns


def pair(n: int, name: str, arguments: str, structured: object, *, is_error: bool = False) -> list[Item]:
    call_id = f"call_h{n}"
    return [FunctionCall(turn_id="t1", call_id=call_id, name=name, arguments=arguments),
            FunctionCallOutput(turn_id="t1", call_id=call_id, output="", structured=structured, is_error=is_error)]


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
