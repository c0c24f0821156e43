"""Kernel side of "nothing the person typed is lost": each change to a cell carries the source
the model last read of it, the extension's ``conflict`` becomes an error naming the cell with its
source now, and ``delete_cell`` / ``move_cell`` show what they do before their approval. The
extension's own check runs in the browser tests (tests/e2e/test_cell_changes.py)."""

from __future__ import annotations

from nbagent.notebook.bridge import BridgeError
from nbagent.protocol.bridge import (
    CellInfo,
    DeleteCellParams,
    DeleteCellResponse,
    MoveCellParams,
    MoveCellResponse,
    OutputSummary,
    ReplaceCellParams,
    ReplaceCellResponse,
)
from nbagent.tools.notebook import NotebookTools
from tests.tools.test_notebook_tools import CALL, FakeBridge, spec, text


class CheckingBridge(FakeBridge):
    """The fake notebook, refusing a change whose ``expected_source`` is not the cell's, as the
    extension does."""

    def _cell(self, cell_id: str, method: str, expected: str | None) -> CellInfo:
        cell = next((c for c in self.cells if c.id == cell_id), None)
        if cell is None:
            raise BridgeError(method, f"no cell with id {cell_id!r}", "not_found")
        if expected is not None and cell.source != expected:
            raise BridgeError(method, f"cell {cell_id!r} was changed", "conflict")
        return cell

    async def replace_cell(self, params: ReplaceCellParams) -> ReplaceCellResponse:
        self.calls.append(("replace_cell", params))
        cell = self._cell(params.cell_id, "replace_cell", params.expected_source)
        old, cell.source = cell.source, params.source
        return ReplaceCellResponse(cell_id=cell.id, index=cell.index, old_source=old)

    async def delete_cell(self, params: DeleteCellParams) -> DeleteCellResponse:
        self.calls.append(("delete_cell", params))
        cell = self._cell(params.cell_id, "delete_cell", params.expected_source)
        self.cells.remove(cell)
        self._reindex()
        return DeleteCellResponse(cell_id=cell.id, index=cell.index, old_source=cell.source)

    async def move_cell(self, params: MoveCellParams) -> MoveCellResponse:
        self.calls.append(("move_cell", params))
        cell = self._cell(params.cell_id, "move_cell", params.expected_source)
        start = cell.index
        self.cells.remove(cell)
        self.cells.insert(params.to_index, cell)
        self._reindex()
        return MoveCellResponse(cell_id=cell.id, from_index=start, to_index=params.to_index)


def make() -> tuple[NotebookTools, CheckingBridge]:
    bridge = CheckingBridge()
    return NotebookTools(bridge, shell=object(), display=lambda md, plain: None), bridge


async def call(tools: NotebookTools, name: str, **arguments: object):  # type: ignore[no-untyped-def]
    return await tools.call_tool(spec(tools, name), arguments, CALL)


async def test_a_cell_the_person_changed_after_the_read_is_not_overwritten_and_the_model_sees_it() -> None:
    tools, bridge = make()
    await call(tools, "read_notebook")
    bridge.cells[0].source = "x = 1  # the person typed this"
    refused = await call(tools, "replace_cell", cell_id="c0", source="x = 2")
    assert refused.is_error
    assert "the person edited cell c0" in text(refused) and "x = 1  # the person typed this" in text(refused)
    assert bridge.cells[0].source == "x = 1  # the person typed this"
    # The error showed the model the cell as it is now: a change built on it goes through.
    again = await call(tools, "replace_cell", cell_id="c0", source="x = 1  # the person typed this\ny = 2")
    assert not again.is_error and bridge.cells[0].source.endswith("y = 2")


async def test_delete_and_move_are_refused_on_a_changed_cell_too() -> None:
    tools, bridge = make()
    await call(tools, "read_notebook")
    bridge.cells[1].source = "# Title, edited"
    for name, extra in (("delete_cell", {}), ("move_cell", {"to_index": 0})):
        refused = await call(tools, name, cell_id="c1", **extra)
        assert refused.is_error and "the person edited cell c1" in text(refused), text(refused)
        tools._versions["c1"] = "# Title"  # as if the model had not read the error
    assert [c.source for c in bridge.cells] == ["x = 1", "# Title, edited"]


async def test_the_version_is_the_kernels_not_the_models() -> None:
    """A model that names a version (any spelling) is refused before anything is sent; the one
    sent is what the tools read, so a forged one cannot be slipped in."""
    tools, bridge = make()
    await call(tools, "read_notebook")
    bridge.cells[0].source = "x = 1  # edited"
    for forged in ({"expected_source": "x = 1  # edited"}, {"version": "anything"}):
        result = await call(tools, "replace_cell", cell_id="c0", source="x = 9", **forged)
        assert result.is_error and "bad arguments" in text(result)
    assert bridge.cells[0].source == "x = 1  # edited"
    refused = await call(tools, "replace_cell", cell_id="c0", source="x = 9")
    assert refused.is_error and bridge.cells[0].source == "x = 1  # edited"
    sent = [p for name, p in bridge.calls if name == "replace_cell"]
    assert [p.expected_source for p in sent] == ["x = 1"]


async def test_a_cell_never_read_is_held_to_what_its_approval_showed() -> None:
    tools, bridge = make()
    shown = await tools.preview(spec(tools, "replace_cell"), {"cell_id": "c0", "source": "x = 2"})
    assert "-x = 1" in shown[0].unified_diff
    bridge.cells[0].source = "x = 1  # typed before the click"
    refused = await call(tools, "replace_cell", cell_id="c0", source="x = 2")
    assert refused.is_error and bridge.cells[0].source == "x = 1  # typed before the click"
    # The next panel says the change will be refused.
    later = await tools.preview(spec(tools, "replace_cell"), {"cell_id": "c0", "source": "x = 2"})
    assert later[0].note == ""  # the error above was the model's read of the cell
    bridge.cells[0].source = "x = 1  # and more"
    warned = await tools.preview(spec(tools, "replace_cell"), {"cell_id": "c0", "source": "x = 2"})
    assert "the person changed this cell after the agent last read it" in warned[0].note


async def test_delete_and_move_show_what_they_do_before_the_approval() -> None:
    tools, bridge = make()
    bridge.cells[0].outputs = [OutputSummary(output_type="stream", text="1\n")]
    gone = await tools.preview(spec(tools, "delete_cell"), {"cell_id": "c0"})
    assert gone[0].kind == "delete" and "-x = 1" in gone[0].unified_diff and "its output goes too" in gone[0].note
    move = await tools.preview(spec(tools, "move_cell"), {"cell_id": "c1", "to_index": 0})
    assert move[0].kind == "move" and "from index 1 to index 0" in move[0].note
    done = await call(tools, "move_cell", cell_id="c1", to_index=0)
    assert not done.is_error and [c.id for c in bridge.cells] == ["c1", "c0"]
    deleted = await call(tools, "delete_cell", cell_id="c0")
    assert "x = 1" in text(deleted) and [c.id for c in bridge.cells] == ["c1"]
