"""What a notebook tool call would do to a cell, as the change its approval shows: the cell's
source diffed against what the notebook holds now, and what happens to its outputs."""

from __future__ import annotations

import hashlib

from nbagent.patch import unified_diff
from nbagent.protocol import PatchChange
from nbagent.protocol.bridge import CellInfo


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _diff(old: str, new: str, path: str, new_path: str) -> str:
    """``old`` -> ``new``. A cell's source has no final newline, so ``\\ No newline at end of
    file`` would end every diff and tell the reader nothing: it is shown only when one side ends
    with a newline and the other does not, a change to see. An empty side has no last line."""
    if not old.endswith("\n") and not new.endswith("\n"):
        old, new = (text + "\n" if text else text for text in (old, new))
    return unified_diff(old, new, path, new_path)


def replaced(cell: CellInfo, source: str) -> PatchChange:
    """``replace_cell``: its source before and after. The outputs are not cleared (the bridge
    sets the source only), so a cell with outputs says they stay, showing the old source's run."""
    name = f"cell {cell.id}"
    note = ""
    if cell.outputs:
        what = "its output is" if len(cell.outputs) == 1 else f"its {len(cell.outputs)} outputs are"
        note = f"{what} kept, not cleared: the old source's results stay until the cell runs again"
    return PatchChange(
        kind="update", path=name, unified_diff=_diff(cell.source, source, f"{name} (index {cell.index}, now)", f"{name} (proposed)"),
        old_hash=_hash(cell.source), new_hash=_hash(source), note=note,
    )  # fmt: skip


def inserted(source: str, cell_type: str) -> PatchChange:
    """``insert_cell``: a new cell, every line added."""
    return PatchChange(
        kind="add", path=f"new {cell_type} cell", unified_diff=_diff("", source, "/dev/null", f"new {cell_type} cell"),
        new_hash=_hash(source),
    )  # fmt: skip


def deleted(cell: CellInfo) -> PatchChange:
    """``delete_cell``: every line removed, and its outputs with it."""
    name = f"cell {cell.id}"
    what = "it has no outputs" if not cell.outputs else (
        "its output goes too" if len(cell.outputs) == 1 else f"its {len(cell.outputs)} outputs go too")
    return PatchChange(
        kind="delete", path=name, unified_diff=_diff(cell.source, "", f"{name} (index {cell.index}, now)", "/dev/null"),
        old_hash=_hash(cell.source), note=f"the cell is deleted; {what}",
    )  # fmt: skip


def moved(cell: CellInfo, to_index: int, count: int) -> PatchChange:
    """``move_cell``: the same cell at another position; nothing in it changes."""
    name = f"cell {cell.id}"
    where = "it stays where it is" if to_index == cell.index else f"from index {cell.index} to index {to_index}"
    if to_index >= count:
        where = f"to index {to_index}, past the last cell ({count - 1}): the move will be refused"
    return PatchChange(
        kind="move", path=f"{name} (index {cell.index})", move_path=f"{name} (index {to_index})",
        old_hash=_hash(cell.source), new_hash=_hash(cell.source), note=f"moves {where}; its source and outputs go with it",
    )  # fmt: skip
