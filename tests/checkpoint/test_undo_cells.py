"""Undoing a turn's changes to the live notebook's cells: the notebook tools change cells through
the kernel's bridge (a simulated extension that keeps the cells and checks ``expected_source`` as
the real one does), the rollout keeps their calls and results, and the undo puts the cells back
in reverse order, refusing when the person edited a cell since or a later turn changed it."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from nbagent import Session
from nbagent.checkpoint import UndoRefused, cells_undone
from nbagent.checkpoint.cells import call_undo_op
from nbagent.checkpoint.cells import undo_op as cells_undo_op
from nbagent.checkpoint.outputs import CELL_CHARS, TURN_CHARS
from nbagent.cli import main
from nbagent.notebook.bridge import NotebookBridge
from nbagent.protocol import CallInfo, FunctionCall, FunctionCallOutput, GhostSnapshot, Item, UndoItem, UserMessage
from nbagent.tools.notebook import NotebookTools
from nbagent.tools.patch import PatchTools
from tests.bridge.fakes import HELLO, FakeFactory, error, ok
from tests.checkpoint.test_undo_cli import call, config_for, items, turn, undo_op


class Notebook:
    """The cells of a live document, changed only when a cell still holds ``expected_source``;
    a write's provenance goes into the cell's ``metadata["nbagent"]``; a deleted cell's metadata
    (but ``trusted``), attachments and outputs go with it as the extension sends them (within
    ``max_outputs_chars``) and come back, under its id while no cell holds it, when an insert
    carries them."""

    def __init__(self, cells: list[tuple[str, str, str]], outputs: dict[str, list[dict[str, Any]]] | None = None,
                 extra: dict[str, dict[str, Any]] | None = None) -> None:
        self.cells = [{"id": i, "cell_type": t, "source": s, "metadata": {}, **(extra or {}).get(i, {})} for i, t, s in cells]
        for cell in self.cells:
            if cell["id"] in (outputs or {}):
                cell.update(outputs=(outputs or {})[cell["id"]], execution_count=7)
        self.made = 0

    def provenance(self, cell_id: str) -> str | None:
        """The call the cell's badge names."""
        return next((c["metadata"].get("nbagent") or {}).get("call_id") for c in self.cells if c["id"] == cell_id)

    def cell(self, source: str) -> dict[str, Any]:
        return next(c for c in self.cells if c["source"] == source)

    def view(self) -> list[tuple[str, str, str]]:
        return [(c["id"], c["cell_type"], c["source"]) for c in self.cells]

    def __call__(self, request: dict[str, Any]) -> dict[str, Any] | None:
        method, p = request["method"], request.get("params") or {}
        if method == "hello":
            return ok(request, HELLO)
        if method == "read_notebook":
            return ok(request, {"path": HELLO["path"], "cells": [
                {**c, "index": n, "provenance": c["metadata"].get("nbagent")} for n, c in enumerate(self.cells)]})
        if method == "insert_cell":
            index = len(self.cells) if p.get("index") is None else p["index"]
            if not 0 <= index <= len(self.cells):
                return error(request, "bad_request", f"index {index} is out of range 0..{len(self.cells)}")
            cell_id = p.get("cell_id")
            if cell_id is None or any(c["id"] == cell_id for c in self.cells):
                self.made += 1
                cell_id = f"new{self.made}"
            metadata = {k: v for k, v in (p.get("metadata") or {}).items() if k != "trusted"}
            if p.get("provenance"):
                metadata["nbagent"] = p["provenance"]
            self.cells.insert(index, {"id": cell_id, "cell_type": p["cell_type"], "source": p["source"], "metadata": metadata,
                                      "outputs": p.get("outputs", []), "execution_count": p.get("execution_count"),
                                      **({"attachments": p["attachments"]} if p.get("attachments") else {})})
            return ok(request, {"cell_id": cell_id, "index": index})
        index = next((n for n, c in enumerate(self.cells) if c["id"] == p["cell_id"]), None)
        if index is None:
            return error(request, "not_found", f"no cell with id {p['cell_id']!r}")
        old = self.cells[index]["source"]
        if p.get("expected_source") is not None and p["expected_source"] != old:
            return error(request, "conflict", f"cell {p['cell_id']} changed")
        if method == "replace_cell":
            cell = self.cells[index]
            before = cell["metadata"].get("nbagent")
            cell["source"] = p["source"]
            if p.get("provenance") or p.get("restore_provenance"):
                cell["metadata"]["nbagent"] = p.get("provenance")
                if cell["metadata"]["nbagent"] is None:
                    del cell["metadata"]["nbagent"]
            return ok(request, {"cell_id": p["cell_id"], "index": index, "old_source": old, "old_provenance": before})
        if method == "delete_cell":
            gone = self.cells.pop(index)
            left, sent = p.get("max_outputs_chars"), {}
            for part in ("metadata", "attachments"):
                value = {k: v for k, v in gone.get(part, {}).items() if k != "trusted"}
                size = len(json.dumps(value, ensure_ascii=False))
                if left is not None and size > left:
                    sent.setdefault("omitted", []).append(part)
                    continue
                sent[part], left = value, None if left is None else left - size
            return ok(request, {"cell_id": p["cell_id"], "index": index, "old_source": old, "cell_type": gone["cell_type"],
                                "outputs": capped(gone.get("outputs", []), left),
                                "execution_count": gone.get("execution_count"), **sent})
        if method == "move_cell":
            self.cells.insert(p["to_index"], self.cells.pop(index))
            return ok(request, {"cell_id": p["cell_id"], "from_index": index, "to_index": p["to_index"]})
        return error(request, "bad_request", f"unknown method {method}")


def capped(outputs: list[dict[str, Any]], most: int | None) -> list[dict[str, Any]]:
    """What the extension's ``cappedOutputs`` sends of a deleted cell's outputs."""
    sent, used = [], 0
    for out in outputs:
        size = len(json.dumps(out, ensure_ascii=False))
        if most is not None and used + size > most:
            sent.append({"output_type": "omitted", "chars": size})
            continue
        sent.append(out)
        used += size
    return sent


BEFORE = [("a", "code", "x = 1"), ("b", "markdown", "# Notes"), ("c", "code", "print(x)"), ("d", "code", "y = 2")]


class Turns:
    """Runs notebook tool calls as turns would, keeping the rollout items they leave."""

    def __init__(self, notebook: Notebook) -> None:
        self.bridge = NotebookBridge(FakeFactory(notebook))
        self.tools = NotebookTools(self.bridge, shell=None, display=lambda *_: None)
        self.items: list[Item] = []
        self.ids = itertools.count(step=2)  # two items a call, so a sequential call is call_<its index>

    async def call(self, turn: str, name: str, **arguments: Any) -> None:
        call_id = f"call_{next(self.ids)}"
        spec = next(s for s in self.tools.list_tools() if s.name == name)
        result = await self.tools.call_tool(spec, arguments, CallInfo(thread_id="thr", turn_id=turn, call_id=call_id))
        assert not result.is_error, result.content
        self.items += [FunctionCall(turn_id=turn, call_id=call_id, name=name, arguments=json.dumps(arguments)),
                       FunctionCallOutput(turn_id=turn, call_id=call_id, output="", structured=result.structured,
                                          undo=result.undo)]

    async def undo(self, turn: str | None = None, *, force: bool = False) -> list[str]:
        op = await cells_undo_op(self.items, self.bridge, turn, force=force, is_notebook=lambda p: False)
        return op.cells

    async def undo_call(self, turn: str, call_id: str) -> list[str]:
        """The Undo on the cell's badge, recorded as the ``Undo`` op records it."""
        op = await call_undo_op(self.items, self.bridge, turn, call_id)
        self.items.append(cells_undone(turn, op.cells, call_id))
        return op.cells


async def _changed(notebook: Notebook) -> Turns:
    turns = Turns(notebook)
    await turns.call("t1", "read_notebook")
    await turns.call("t1", "replace_cell", cell_id="a", source="x = 10")
    await turns.call("t1", "insert_cell", source="z = x + y", index=1)
    await turns.call("t1", "delete_cell", cell_id="b")
    await turns.call("t1", "move_cell", cell_id="d", to_index=0)
    return turns


NOTES = {"metadata": {"tags": ["notes"], "trusted": True}, "attachments": {"fig.png": {"image/png": "iVBORw0KGgo="}}}


async def test_undo_puts_every_cell_back_as_it_was_its_id_metadata_and_badge_too() -> None:
    notebook = Notebook(BEFORE, extra={"b": NOTES})
    turns = await _changed(notebook)
    assert notebook.view() != BEFORE and notebook.provenance("a") == "call_2"
    said = await turns.undo()
    assert notebook.view() == BEFORE  # the deleted cell under its own id
    assert notebook.provenance("a") is None  # the person's cell no longer says the agent wrote it
    b = notebook.cell("# Notes")
    assert b["metadata"] == {"tags": ["notes"]} and b["attachments"] == NOTES["attachments"]  # never trusted
    assert len(said) == 4 and "cell b (deleted by the turn, put back at index 2)" in said


async def test_a_cell_replaced_then_deleted_comes_back_as_it_was_and_a_taken_id_gets_a_new_one() -> None:
    notebook = Notebook(BEFORE)
    turns = Turns(notebook)
    await turns.call("t1", "replace_cell", cell_id="a", source="x = 10")
    await turns.call("t1", "delete_cell", cell_id="a")
    await turns.call("t1", "delete_cell", cell_id="c")
    notebook.cells.append({"id": "c", "cell_type": "code", "source": "pasted", "metadata": {}})  # the person's, same id
    said = await turns.undo()
    assert [(i, s) for i, _, s in notebook.view()] == [("a", "x = 1"), ("b", "# Notes"), ("new1", "print(x)"),
                                                       ("d", "y = 2"), ("c", "pasted")]
    assert notebook.provenance("a") is None and "cell c (deleted by the turn, put back at index 1 as new1)" in said


async def test_metadata_over_the_cap_is_not_kept_and_a_hostile_record_puts_back_no_trust() -> None:
    huge = {"tags": ["x" * CELL_CHARS]}
    notebook = Notebook(BEFORE, extra={"b": {"metadata": huge}})
    turns = await _changed(notebook)
    (deleted,) = [i for i in turns.items if isinstance(i, FunctionCallOutput) and i.call_id == "call_6"]
    assert deleted.undo == {"not_kept": ["metadata"]}
    assert "cell b (deleted by the turn, put back at index 2, without its metadata (too large to have been kept))" \
        in await turns.undo()
    assert notebook.cell("# Notes")["metadata"] == {}
    # The rollout is a file anyone may edit: what is not of its shape is left out, trust always.
    turns = await _changed(notebook)
    for item in turns.items:
        if isinstance(item, FunctionCallOutput) and item.call_id in ("call_2", "call_6"):
            item.undo = {"metadata": {"trusted": True, "tags": ["t"], "nbagent": 5}, "attachments": ["junk"],
                         "not_kept": "metadata", "provenance": {"call_id": 5}, "outputs": "junk"}
    await turns.undo()
    assert notebook.cell("# Notes")["metadata"] == {"tags": ["t"], "nbagent": 5} and "attachments" not in notebook.cell("# Notes")
    assert notebook.provenance("a") is None


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


OUTPUTS = [
    {"output_type": "stream", "name": "stdout", "text": ["x is ", "1\n"]},
    {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgoAAAA=", "text/plain": ["<Figure ", "640x480>"]},
     "metadata": {}},
    {"output_type": "execute_result", "execution_count": 7, "data": {"text/plain": "1"}, "metadata": {}},
]
KEPT = [  # multiline strings joined, as nbformat allows and the redactor needs
    {"output_type": "stream", "name": "stdout", "text": "x is 1\n"},
    {"output_type": "display_data", "data": {"image/png": "iVBORw0KGgoAAAA=", "text/plain": "<Figure 640x480>"}, "metadata": {}},
    {"output_type": "execute_result", "execution_count": 7, "data": {"text/plain": "1"}, "metadata": {}},
]


async def delete_in_a_turn(server: Any, tmp_path: Path, notebook: Notebook, cell_id: str) -> tuple[str, list[Item]]:
    """A model turn (the local server, the real ``openai`` client) that deletes ``cell_id``; the
    thread's id and the items the live session held."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    server.script([call("delete_cell", {"cell_id": cell_id}), {"text": "done"}])
    async with Session(config=config_for(server, home, ws), cwd=ws) as session:
        session.add_provider(Turns(notebook).tools)
        result = await session.run("delete that cell")
        live = list(session.snapshot().items)
    assert result.ok, result.error
    return result.thread_id, live


async def test_a_deleted_cells_outputs_come_back_with_it_from_the_rollout_and_the_model_never_reads_them(
        openai_server, tmp_path: Path) -> None:
    notebook = Notebook(BEFORE, {"c": OUTPUTS})
    thread, live = await delete_in_a_turn(openai_server, tmp_path, notebook, "c")
    assert "print(x)" not in [s for _, _, s in notebook.view()]
    sent = json.dumps(openai_server.requests[-1]["input"])
    assert "print(x)" in sent and "iVBORw0KGgo" not in sent and "Figure" not in sent and "x is" not in sent

    resumed = items(tmp_path / "home", thread, object)  # as resume reads the thread: the same record
    assert [i for i in resumed if isinstance(i, FunctionCallOutput)] == [i for i in live if isinstance(i, FunctionCallOutput)]
    turns = Turns(notebook)
    turns.items = resumed
    said = await turns.undo()
    assert said == ["cell c (deleted by the turn, put back at index 2, with its outputs)"]
    back = notebook.cell("print(x)")
    assert back["outputs"] == KEPT and back["execution_count"] == 7 and notebook.view()[2] == ("c", "code", "print(x)")


async def test_the_badges_undo_puts_the_outputs_back_too_and_a_turn_keeps_at_most_its_cap() -> None:
    """Five cells of nearly a cell's cap each, deleted in one turn by parallel calls: four fit the
    turn's cap, the fifth comes back with a note in place of its output, and its undo says so."""
    big = {"output_type": "stream", "name": "stdout", "text": "x" * (CELL_CHARS - 100)}
    assert 4 * len(json.dumps(big)) <= TURN_CHARS < 5 * len(json.dumps(big))
    notebook = Notebook([(f"c{n}", "code", f"print({n})") for n in range(5)], {f"c{n}": [big] for n in range(5)})
    turns = Turns(notebook)
    await asyncio.gather(*(turns.call("t1", "delete_cell", cell_id=f"c{n}") for n in range(5)))
    assert notebook.cells == []
    (cut,) = [i for i in turns.items if isinstance(i, FunctionCallOutput) and i.undo and i.undo["outputs_not_kept"]]
    (said,) = await turns.undo_call("t1", cut.call_id)  # the badge of that one
    assert "with its outputs (1 of 1 too large to have been kept" in said
    (note,) = notebook.cells[0]["outputs"]
    assert note["output_type"] == "stream" and "not kept for undo" in note["text"] and len(note["text"]) < 200
    await turns.undo("t1")
    assert sorted(c["source"] for c in notebook.cells) == [f"print({n})" for n in range(5)]
    assert [c["outputs"] for c in notebook.cells].count([big]) == 4


async def test_undo_list_names_the_turns_that_changed_only_cells_and_what_each_puts_back(
        openai_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    monkeypatch.setenv("NBAGENT_HOME", str(home))
    patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** End Patch"
    openai_server.script([call("insert_cell", {"source": "z = 1"}), call("delete_cell", {"cell_id": "c"}), {"text": "1"},
                          call("apply_patch", {"input": patch}), call("replace_cell", {"cell_id": "a", "source": "x = 2"}),
                          {"text": "2"}])  # fmt: skip
    notebook = Notebook(BEFORE, {"c": OUTPUTS})
    async with Session(config=config_for(openai_server, home, ws), cwd=ws) as session:
        session.add_provider(Turns(notebook).tools)
        session.add_provider(PatchTools(ws))
        assert (await session.run("cells")).ok and (await session.run("files and a cell")).ok
        first, second = (i.turn_id for i in session.snapshot().items if isinstance(i, UserMessage))
        thread = session.snapshot().thread_id
    assert main(["undo", thread, "--list"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{first}  can be undone  cells, from the open notebook: new1 (removed), c (put back with its outputs)",
        f"{second}  can be undone  files: a.txt; cells, from the open notebook: a (source put back)",
    ]
