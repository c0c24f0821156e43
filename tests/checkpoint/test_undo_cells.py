"""Undoing a turn's changes to the live notebook's cells: the notebook tools change cells through
the kernel's bridge (a simulated extension that keeps the cells and checks ``expected_source`` as
the real one does), the rollout keeps their calls and results, and the undo puts the cells back
in reverse order, refusing when the person edited a cell since or a later turn changed it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nbagent import Session
from nbagent.checkpoint import UndoRefused
from nbagent.checkpoint.cells import undo_op as cells_undo_op
from nbagent.notebook.bridge import NotebookBridge
from nbagent.protocol import CallInfo, FunctionCall, FunctionCallOutput, GhostSnapshot, Item, UndoItem
from nbagent.tools.notebook import NotebookTools
from tests.bridge.fakes import HELLO, FakeFactory, error, ok
from tests.checkpoint.test_undo_cli import call, config_for, items, turn, undo_op


class Notebook:
    """The cells of a live document, changed only when a cell still holds ``expected_source``."""

    def __init__(self, cells: list[tuple[str, str, str]]) -> None:
        self.cells = [{"id": i, "cell_type": t, "source": s} for i, t, s in cells]
        self.made = 0

    def view(self) -> list[tuple[str, str, str]]:
        return [(c["id"], c["cell_type"], c["source"]) for c in self.cells]

    def __call__(self, request: dict[str, Any]) -> dict[str, Any] | None:
        method, p = request["method"], request.get("params") or {}
        if method == "hello":
            return ok(request, HELLO)
        if method == "read_notebook":
            return ok(request, {"path": HELLO["path"], "cells": [{**c, "index": n} for n, c in enumerate(self.cells)]})
        if method == "insert_cell":
            self.made += 1
            index = len(self.cells) if p.get("index") is None else p["index"]
            if not 0 <= index <= len(self.cells):
                return error(request, "bad_request", f"index {index} is out of range 0..{len(self.cells)}")
            self.cells.insert(index, {"id": f"new{self.made}", "cell_type": p["cell_type"], "source": p["source"]})
            return ok(request, {"cell_id": f"new{self.made}", "index": index})
        index = next((n for n, c in enumerate(self.cells) if c["id"] == p["cell_id"]), None)
        if index is None:
            return error(request, "not_found", f"no cell with id {p['cell_id']!r}")
        old = self.cells[index]["source"]
        if p.get("expected_source") is not None and p["expected_source"] != old:
            return error(request, "conflict", f"cell {p['cell_id']} changed")
        if method == "replace_cell":
            self.cells[index]["source"] = p["source"]
            return ok(request, {"cell_id": p["cell_id"], "index": index, "old_source": old})
        if method == "delete_cell":
            gone = self.cells.pop(index)
            return ok(request, {"cell_id": p["cell_id"], "index": index, "old_source": old, "cell_type": gone["cell_type"]})
        if method == "move_cell":
            self.cells.insert(p["to_index"], self.cells.pop(index))
            return ok(request, {"cell_id": p["cell_id"], "from_index": index, "to_index": p["to_index"]})
        return error(request, "bad_request", f"unknown method {method}")


BEFORE = [("a", "code", "x = 1"), ("b", "markdown", "# Notes"), ("c", "code", "print(x)"), ("d", "code", "y = 2")]


class Turns:
    """Runs notebook tool calls as turns would, keeping the rollout items they leave."""

    def __init__(self, notebook: Notebook) -> None:
        self.bridge = NotebookBridge(FakeFactory(notebook))
        self.tools = NotebookTools(self.bridge, shell=None, display=lambda *_: None)
        self.items: list[Item] = []

    async def call(self, turn: str, name: str, **arguments: Any) -> None:
        call_id = f"call_{len(self.items)}"
        spec = next(s for s in self.tools.list_tools() if s.name == name)
        result = await self.tools.call_tool(spec, arguments, CallInfo(thread_id="thr", turn_id=turn, call_id=call_id))
        assert not result.is_error, result.content
        self.items += [FunctionCall(turn_id=turn, call_id=call_id, name=name, arguments=json.dumps(arguments)),
                       FunctionCallOutput(turn_id=turn, call_id=call_id, output="", structured=result.structured)]

    async def undo(self, turn: str | None = None, *, force: bool = False) -> list[str]:
        op = await cells_undo_op(self.items, self.bridge, turn, force=force, is_notebook=lambda p: False)
        return op.cells


async def _changed(notebook: Notebook) -> Turns:
    turns = Turns(notebook)
    await turns.call("t1", "read_notebook")
    await turns.call("t1", "replace_cell", cell_id="a", source="x = 10")
    await turns.call("t1", "insert_cell", source="z = x + y", index=1)
    await turns.call("t1", "delete_cell", cell_id="b")
    await turns.call("t1", "move_cell", cell_id="d", to_index=0)
    return turns


async def test_undo_puts_every_cell_back_in_order_with_its_type() -> None:
    notebook = Notebook(BEFORE)
    turns = await _changed(notebook)
    assert notebook.view() != BEFORE
    said = await turns.undo()
    assert [(t, s) for _, t, s in notebook.view()] == [(t, s) for _, t, s in BEFORE]
    assert [i for i, _, _ in notebook.view()] == ["a", "new2", "c", "d"]  # the deleted cell comes back as a new one
    assert len(said) == 4 and "cell b (deleted by the turn, put back at index 2 as new2)" in said


async def test_a_cell_the_person_edited_since_is_named_and_nothing_is_restored_unless_forced() -> None:
    notebook = Notebook(BEFORE)
    turns = await _changed(notebook)
    typed = next(c for c in notebook.cells if c["id"] == "new1")
    typed["source"] += "  # mine"  # the person typed into the inserted cell
    left = notebook.view()
    with pytest.raises(UndoRefused, match=r"cell new1 \(edited since\) changed after turn t1.*--force"):
        await turns.undo("t1")
    assert notebook.view() == left
    await turns.undo("t1", force=True)
    assert [(t, s) for _, t, s in notebook.view()] == [(t, s) for _, t, s in BEFORE]


async def test_a_later_turn_that_changed_the_same_cell_is_undone_first() -> None:
    notebook = Notebook(BEFORE)
    turns = await _changed(notebook)
    await turns.call("t2", "replace_cell", cell_id="a", source="x = 100")
    with pytest.raises(UndoRefused, match="turn t2, later, changed cell a too: undo it first"):
        await turns.undo("t1")
    assert await turns.undo() == ["cell a (its source restored)"]  # the latest turn by default
    assert ("a", "code", "x = 10") in notebook.view()


async def test_the_undo_records_the_cells_and_keeps_the_open_notebooks_file(openai_server, tmp_path: Path) -> None:
    """The op the kernel sends after restoring cells: the notebook's file (saved live) is kept,
    the other files restored, and the rollout, read back as resume reads it, names the cells."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    (ws / "nb.ipynb").write_text("{}")
    patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** Update File: nb.ipynb\n@@\n-{}\n+{\"x\": 1}\n*** End Patch"
    thread = await turn(openai_server, home, ws, [call("apply_patch", {"input": patch}), {"text": "done"}])
    (snapshot,) = items(home, thread, GhostSnapshot)
    done = await undo_op(home, thread, turn_id=snapshot.turn_id, keep=["nb.ipynb"], cells=["cell a (its source restored)"])
    assert done.success and "cell a (its source restored)" in done.message, done.message
    assert (ws / "a.txt").read_text() == "one\n" and (ws / "nb.ipynb").read_text() == '{"x": 1}\n'
    (undone,) = items(home, thread, UndoItem)
    assert undone.cells == ["cell a (its source restored)"] and undone.restored == ["a.txt"]
    assert "notebook cells it changed are back" in undone.text


async def test_without_the_notebook_open_the_undo_says_the_cells_need_it(openai_server, tmp_path: Path) -> None:
    """``nbagent undo`` has no live notebook: a turn that changed only cells is not marked undone,
    and the answer says where its cells are put back."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    openai_server.script([call("insert_cell", {"source": "z = 1"}), {"text": "done"}])
    notebook = Notebook(BEFORE)
    async with Session(config=config_for(openai_server, home, ws), cwd=ws) as session:
        session.add_provider(Turns(notebook).tools)
        result = await session.run("add a cell")
    assert result.ok and ("new1", "code", "z = 1") in notebook.view()
    done = await undo_op(home, result.thread_id)
    assert not done.success and "changed notebook cells, which are put back from the notebook itself" in done.message
    assert items(home, result.thread_id, UndoItem) == []
