"""A cell's badge "Undo": one call's cell change is put back, with the cell's badge as it was
before that call (none, or an earlier call's), the turn's other cells stay as the turn left
them, the record names the call, and a whole-turn undo afterwards leaves that cell as it is (it
is undone already)."""

from __future__ import annotations

import pytest

from nbagent.checkpoint import UndoRefused
from nbagent.checkpoint.cells import call_undo_op
from nbagent.checkpoint.undo import cells_undone
from tests.checkpoint.test_undo_cells import BEFORE, Notebook, _changed


async def test_one_call_is_undone_alone_and_the_turn_undo_then_skips_it() -> None:
    notebook = Notebook(BEFORE)
    turns = await _changed(notebook)  # call_2 replaced a, call_4 inserted new1, call_6 deleted b, call_8 moved d
    left = notebook.view()
    op = await call_undo_op(turns.items, turns.bridge, "t1", "call_2")
    assert op.call_id == "call_2" and op.cells == ["cell a (its source restored)"]
    assert notebook.view() == [(i, t, "x = 1" if i == "a" else s) for i, t, s in left]  # only cell a changed
    assert notebook.provenance("a") is None and notebook.provenance("new1") == "call_4"  # the person's again: no badge
    turns.items.append(cells_undone("t1", op.cells, "call_2"))
    with pytest.raises(UndoRefused, match="undone already"):
        await call_undo_op(turns.items, turns.bridge, "t1", "call_2")
    said = await turns.undo("t1")  # the whole turn: three cells, not a again
    assert len(said) == 3 and not any(s.startswith("cell a ") for s in said), said
    assert [(t, s) for _, t, s in notebook.view()] == [(t, s) for _, t, s in BEFORE]


async def test_an_earlier_call_waits_for_a_later_one_that_changed_the_same_cell() -> None:
    notebook = Notebook(BEFORE)
    turns = await _changed(notebook)
    await turns.call("t1", "replace_cell", cell_id="a", source="x = 11")  # call_10
    left = notebook.view()
    with pytest.raises(UndoRefused, match="call call_10 of turn t1, later, changed cell a too: undo it first"):
        await call_undo_op(turns.items, turns.bridge, "t1", "call_2")
    assert notebook.view() == left
    await call_undo_op(turns.items, turns.bridge, "t1", "call_10")
    assert ("a", "code", "x = 10") in notebook.view() and notebook.provenance("a") == "call_2"  # the earlier call's badge
