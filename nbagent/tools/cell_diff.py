"""What a notebook tool call would do to a cell, as the change its approval shows: the cell's
source diffed against what the notebook holds now, and what happens to its outputs."""

from __future__ import annotations

import hashlib

from nbagent.patch import unified_diff
from nbagent.protocol import PatchChange
from nbagent.protocol.bridge import CellInfo


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def replaced(cell: CellInfo, source: str) -> PatchChange:
    """``replace_cell``: its source before and after. The outputs are not cleared (the bridge
    sets the source only), so a cell with outputs says they stay, showing the old source's run."""
    name = f"cell {cell.id}"
    note = ""
    if cell.outputs:
        what = "its output is" if len(cell.outputs) == 1 else f"its {len(cell.outputs)} outputs are"
        note = f"{what} kept, not cleared: the old source's results stay until the cell runs again"
    return PatchChange(
        kind="update", path=name, unified_diff=unified_diff(cell.source, source, f"{name} (index {cell.index}, now)", f"{name} (proposed)"),
        old_hash=_hash(cell.source), new_hash=_hash(source), note=note,
    )  # fmt: skip


def inserted(source: str, cell_type: str) -> PatchChange:
    """``insert_cell``: a new cell, every line added."""
    return PatchChange(
        kind="add", path=f"new {cell_type} cell", unified_diff=unified_diff("", source, "/dev/null", f"new {cell_type} cell"),
        new_hash=_hash(source),
    )  # fmt: skip
