"""Undo a turn's changes to the live notebook's cells, through the JupyterLab extension's bridge.

The cells a turn changed are not on disk (the agent writes the live document), so they are not
in its ghost commit: they are read back from the rollout, where each notebook tool's call keeps
its arguments (the source it wrote) and its result (the cell's id, index and source before).
The inverses run in reverse order, each with ``expected_source`` set to what the cell holds,
so a keystroke between the check and the write is never overwritten. A cell the person changed
after the turn is named and nothing is restored, unless the undo is forced; a later turn that
changed the same cell must be undone first.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from nbagent.checkpoint.outputs import Restorable, restorable
from nbagent.checkpoint.undo import UndoRefused, plan_undo, short, turns_undone
from nbagent.protocol import FunctionCall, FunctionCallOutput, GhostSnapshot, Item, Undo, UndoItem
from nbagent.protocol import bridge as wire


class CellBridge(Protocol):
    """What the undo needs of ``nbagent.notebook.bridge.NotebookBridge``."""

    async def read_notebook(self, params: wire.ReadNotebookParams | None = None) -> wire.ReadNotebookResponse: ...
    async def insert_cell(self, params: wire.InsertCellParams) -> wire.InsertCellResponse: ...
    async def replace_cell(self, params: wire.ReplaceCellParams) -> wire.ReplaceCellResponse: ...
    async def delete_cell(self, params: wire.DeleteCellParams) -> wire.DeleteCellResponse: ...
    async def move_cell(self, params: wire.MoveCellParams) -> wire.MoveCellResponse: ...


Op = Literal["inserted", "replaced", "deleted", "moved"]


@dataclass(frozen=True)
class CellChange:
    """One cell change a notebook tool made: ``index`` is where the cell was (moved: from),
    ``before``/``after`` its source before and after (``None`` where there is none); ``kept``:
    what else its undo puts back (a deleted cell's metadata and outputs, a replaced cell's
    provenance)."""

    op: Op
    cell_id: str
    index: int
    to_index: int | None
    before: str | None
    after: str | None
    cell_type: wire.CellType
    kept: Restorable = Restorable()


def _change(call: FunctionCall, output: FunctionCallOutput) -> CellChange | None:
    done = output.structured if isinstance(output.structured, dict) else {}
    op, cell_id, index = done.get("status"), done.get("cell_id"), done.get("index", done.get("from_index"))
    if output.is_error or op not in ("inserted", "replaced", "deleted", "moved") or not isinstance(cell_id, str) \
            or not isinstance(index, int):
        return None
    try:
        args: Any = json.loads(call.arguments)
    except ValueError:
        args = {}
    args = args if isinstance(args, dict) else {}
    source = args.get("source") if isinstance(args.get("source"), str) else None
    before = done.get("old_source") if isinstance(done.get("old_source"), str) else None
    cell_type = args.get("cell_type") or done.get("cell_type") or "code"
    to_index = done.get("to_index") if isinstance(done.get("to_index"), int) else None
    kind: wire.CellType = "markdown" if cell_type == "markdown" else "raw" if cell_type == "raw" else "code"
    return CellChange(op, cell_id, index, to_index, before, source if op in ("inserted", "replaced") else None, kind,
                      restorable(output.undo, kind))


@dataclass(frozen=True)
class CellCall:
    turn_id: str
    call_id: str
    change: CellChange


def cell_calls(items: Sequence[Item], *, live: bool = True) -> list[CellCall]:
    """Every notebook tool call that changed a cell, in order; ``live``: not undone, whole turn
    or singly."""
    whole = turns_undone(items) if live else set()
    single = {i.call_id for i in items if isinstance(i, UndoItem) and i.call_id is not None} if live else set()
    calls = {i.call_id: i for i in items if isinstance(i, FunctionCall) and i.turn_id is not None
             and i.turn_id not in whole and i.call_id not in single}  # fmt: skip
    found = ((calls[i.call_id], _change(calls[i.call_id], i)) for i in items
             if isinstance(i, FunctionCallOutput) and i.call_id in calls)  # fmt: skip
    return [CellCall(call.turn_id or "", call.call_id, change) for call, change in found if change is not None]


def turn_cell_changes(items: Sequence[Item], turn_id: str) -> list[CellChange]:
    """The cell changes turn ``turn_id``'s notebook tools made, in order, but those undone singly."""
    single = {i.call_id for i in items if isinstance(i, UndoItem) and i.call_id is not None}
    return [c.change for c in cell_calls(items, live=False) if c.turn_id == turn_id and c.call_id not in single]


def cells_turn(items: Sequence[Item], turn_id: str | None) -> str | None:
    """The turn an undo of ``turn_id`` (unset: the latest not undone) means, when it changed cells."""
    turns = list(dict.fromkeys(c.turn_id for c in cell_calls(items)))
    if turn_id is None:
        return turns[-1] if turns else None
    return turn_id if turn_id in turns else None


_RESTORES = {"inserted": "removed", "replaced": "source put back", "deleted": "put back", "moved": "moved back"}


def _restores(c: CellChange) -> str:
    return f"{c.cell_id} ({_RESTORES[c.op]}{' with its outputs' if c.kept.outputs else ''})"


def undoable(items: Sequence[Item]) -> list[str]:
    """One line per turn that changed workspace files or notebook cells, in order: its id,
    whether it is undone, and what its undo puts back (its files; its cells, which only the open
    notebook can put back)."""
    undone = turns_undone(items)
    files = {i.turn_id: [c.path for c in i.changes] for i in items if isinstance(i, GhostSnapshot)}
    cells = {c.turn_id for c in cell_calls(items, live=False)}
    lines = []
    for turn in dict.fromkeys(i.turn_id for i in items if i.turn_id in files or i.turn_id in cells):
        assert turn is not None
        what = [f"files: {short(files[turn])}"] if turn in files else []
        if changes := turn_cell_changes(items, turn):
            what.append(f"cells, from the open notebook: {short([_restores(c) for c in changes])}")
        elif turn in cells:
            what.append("cells: each undone singly already")
        lines.append(f"{turn}  {'undone' if turn in undone else 'can be undone'}  {'; '.join(what)}")
    return lines


@dataclass(frozen=True)
class CellsPlan:
    changes: list[CellChange]
    sources: dict[str, str]
    """Cell id -> its source now (what each inverse is conditional on)."""
    changed_since: list[str]


def _left(changes: Sequence[CellChange]) -> dict[str, str | None]:
    """Cell id -> the source the turn left in it (``None``: it deleted it); moves leave it as is."""
    left: dict[str, str | None] = {}
    for c in changes:
        if c.op == "deleted":
            left[c.cell_id] = None
        elif c.after is not None:
            left[c.cell_id] = c.after
    return left


async def plan_cells(bridge: CellBridge, items: Sequence[Item], turn_id: str, *, force: bool = False,
                     call_id: str | None = None) -> CellsPlan:
    """What undoing ``turn_id``'s cells (or its call ``call_id``'s only) does, or ``UndoRefused``
    naming the later change or the cells the person changed since."""
    live = cell_calls(items)
    mine = [c for c in live if c.turn_id == turn_id and call_id in (None, c.call_id)]
    changes = [c.change for c in mine]
    ids = {c.cell_id for c in changes}
    for later in live[live.index(mine[-1]) + 1:] if mine else []:
        if later.change.cell_id in ids and (call_id is not None or later.turn_id != turn_id):
            what = f"call {later.call_id} of turn {later.turn_id}" if later.turn_id == turn_id else f"turn {later.turn_id}"
            raise UndoRefused(f"{what}, later, changed cell {later.change.cell_id} too: undo it first")
    notebook = await bridge.read_notebook(wire.ReadNotebookParams(include_outputs=False))
    sources = {cell.id: cell.source for cell in notebook.cells}
    changed_since = [f"{cell_id} ({'deleted since' if cell_id not in sources else 'edited since'})"
                     for cell_id, source in _left(changes).items()
                     if source is not None and sources.get(cell_id) != source]  # fmt: skip
    if changed_since and not force:
        raise UndoRefused(f"cell {', '.join(changed_since)} changed after turn {turn_id}; undo would overwrite it, "
                          "so nothing was restored (undo with --force to overwrite)")  # fmt: skip
    return CellsPlan(changes, sources, changed_since)


async def undo_cells(bridge: CellBridge, plan: CellsPlan) -> list[str]:
    """Apply the inverses, latest first; one line per cell restored, in words the model reads."""
    sources = dict(plan.sources)
    said: list[str] = []
    for c in reversed(plan.changes):
        try:
            done = await _inverse(bridge, c, sources)
        except wire.BridgeError as exc:  # a keystroke won the race, or the page went: what was done is still said
            said.append(f"cell {c.cell_id} (not restored: {exc}; the turn's earlier cell changes were left as they are)")
            break
        if done is not None:
            said.append(done)
    return said


async def _inverse(bridge: CellBridge, c: CellChange, sources: dict[str, str]) -> str | None:
    """Undo one change; ``sources`` follows what each cell holds. ``None``: nothing to do."""
    now = sources.get(c.cell_id)
    if c.op == "inserted" and now is not None:  # None: the person deleted it already
        await bridge.delete_cell(wire.DeleteCellParams(cell_id=c.cell_id, expected_source=now))
        sources.pop(c.cell_id)
        return f"cell {c.cell_id} (inserted by the turn, removed)"
    if c.op == "deleted" and c.before is not None:
        kept = c.kept
        reply = await bridge.insert_cell(wire.InsertCellParams(
            source=c.before, cell_type=c.cell_type, index=c.index, outputs=list(kept.outputs),
            execution_count=kept.execution_count, cell_id=c.cell_id, metadata=kept.metadata, attachments=kept.attachments))
        sources[reply.cell_id] = c.before
        under = "" if reply.cell_id == c.cell_id else f" as {reply.cell_id}"  # its id is another cell's now
        return f"cell {c.cell_id} (deleted by the turn, put back at index {c.index}{under}{_with(c)})"
    if c.op == "replaced" and c.before is not None and now is not None:
        await bridge.replace_cell(wire.ReplaceCellParams(cell_id=c.cell_id, source=c.before, expected_source=now,
                                                         provenance=c.kept.provenance,
                                                         restore_provenance=c.kept.restores_provenance))
        sources[c.cell_id] = c.before
        return f"cell {c.cell_id} (its source restored)"
    if c.op == "moved" and now is not None:
        await bridge.move_cell(wire.MoveCellParams(cell_id=c.cell_id, to_index=c.index, expected_source=now))
        return f"cell {c.cell_id} (moved back to index {c.index})"
    return None


def _with(c: CellChange) -> str:
    """What a deleted cell got back besides its source, as said to the model."""
    kept, said = c.kept, ""
    if kept.outputs:
        cut = f" ({kept.outputs_not_kept} of {len(kept.outputs)} too large to have been kept, each replaced by a note saying so)"
        said = ", with its outputs" + (cut if kept.outputs_not_kept else "")
    if kept.not_kept:
        said += f", without its {' and '.join(kept.not_kept)} (too large to have been kept)"
    return said


async def undo_op(items: Sequence[Item], bridge: CellBridge | None, turn_id: str | None, *, force: bool,
                  is_notebook: Callable[[str], bool]) -> Undo:
    """Restore the cells the turn to undo changed in the live notebook (``bridge``: ``None`` when
    no notebook is open) and give the ``Undo`` op that restores its files and records both; the
    open notebook's file (``is_notebook``) is kept, as the live document holds it. Refusals
    (a later turn, a person's change, in a cell or a file) raise ``UndoRefused`` before anything
    is touched."""
    undone = turns_undone(items)
    cell_turn = cells_turn(items, turn_id)
    if turn_id is None and cell_turn is not None:
        later = [i.turn_id for i in items if isinstance(i, GhostSnapshot) and i.turn_id not in undone]
        ordered = [i.turn_id for i in items if i.turn_id in (cell_turn, *later)]
        cell_turn = cell_turn if ordered and ordered[-1] == cell_turn else None
    if cell_turn is None or bridge is None:
        return Undo(turn_id=turn_id, force=force)
    snapshot = next((i for i in items if isinstance(i, GhostSnapshot) and i.turn_id == cell_turn), None)
    keep = [c.path for c in snapshot.changes if is_notebook(c.path)] if snapshot is not None else []
    if snapshot is not None:
        await asyncio.to_thread(plan_undo, items, cell_turn, force=force, keep=keep)
    said = await undo_cells(bridge, await plan_cells(bridge, items, cell_turn, force=force))
    return Undo(turn_id=cell_turn, force=force, keep=keep, cells=said)


def check_call(items: Sequence[Item], turn_id: str, call_id: str) -> None:
    """``UndoRefused`` unless call ``call_id`` of ``turn_id`` changed a cell and is not undone."""
    if not any(c.turn_id == turn_id and c.call_id == call_id for c in cell_calls(items, live=False)):
        raise UndoRefused(f"call {call_id[:80]!r} of turn {turn_id[:80]!r} changed no cell in this thread: "
                          "nothing to undo (the cell's badge may come from another notebook or an edited file)")
    if not any(c.turn_id == turn_id and c.call_id == call_id for c in cell_calls(items)):
        raise UndoRefused(f"call {call_id} of turn {turn_id} is undone already")


async def call_undo_op(items: Sequence[Item], bridge: CellBridge, turn_id: str, call_id: str, *,
                       force: bool = False) -> Undo:
    """Restore the one cell call ``call_id`` of ``turn_id`` changed and give the ``Undo`` op that
    records it. The call is looked up in the rollout: ids the page sends come from the notebook
    file, which anyone may edit, so one that names no cell change of this thread is refused."""
    check_call(items, turn_id, call_id)
    said = await undo_cells(bridge, await plan_cells(bridge, items, turn_id, force=force, call_id=call_id))
    return Undo(turn_id=turn_id, call_id=call_id, force=force, cells=said)
