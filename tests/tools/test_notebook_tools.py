"""The notebook tools over a fake bridge (with and without the extension)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nbagent.core.approval import ask_reason
from nbagent.notebook.bridge import BridgeError, NotebookBridge
from nbagent.protocol import CallInfo, ToolSpec
from nbagent.protocol.bridge import (
    CellInfo,
    InsertCellParams,
    InsertCellResponse,
    OutputSummary,
    ReadNotebookParams,
    ReadNotebookResponse,
    ReplaceCellParams,
    ReplaceCellResponse,
    RunCellParams,
    RunCellResponse,
)
from nbagent.tools.notebook import NotebookTools
from tests.bridge.fakes import GONE, HELLO, FakeFactory, ok

CALL = CallInfo(thread_id="thr_1", turn_id="turn_1", call_id="call_1")


class FakeBridge:
    """An in-memory notebook behind the ``BridgeClient`` interface."""

    def __init__(self, present: bool = True) -> None:
        self.present = present
        self.cells: list[CellInfo] = [
            CellInfo(id="c0", index=0, cell_type="code", source="x = 1", execution_count=1),
            CellInfo(id="c1", index=1, cell_type="markdown", source="# Title"),
        ]
        self.calls: list[tuple[str, Any]] = []

    async def available(self) -> bool:
        return self.present

    def page_gone(self) -> None:
        return None  # no page of the notebook ever answered, or one does now

    def _reindex(self) -> None:
        for i, cell in enumerate(self.cells):
            cell.index = i

    async def read_notebook(self, params: ReadNotebookParams | None = None) -> ReadNotebookResponse:
        self.calls.append(("read_notebook", params))
        return ReadNotebookResponse(path="demo.ipynb", cells=[c.model_copy() for c in self.cells])

    async def insert_cell(self, params: InsertCellParams) -> InsertCellResponse:
        self.calls.append(("insert_cell", params))
        index = len(self.cells) if params.index is None else params.index
        if params.after_cell_id:
            index = [c.id for c in self.cells].index(params.after_cell_id) + 1
        self.cells.insert(index, CellInfo(id=f"n{len(self.calls)}", index=index, cell_type=params.cell_type,
                                          source=params.source, provenance=params.provenance))
        self._reindex()
        return InsertCellResponse(cell_id=self.cells[index].id, index=index)

    async def replace_cell(self, params: ReplaceCellParams) -> ReplaceCellResponse:
        self.calls.append(("replace_cell", params))
        for cell in self.cells:
            if cell.id == params.cell_id:
                old, cell.source = cell.source, params.source
                return ReplaceCellResponse(cell_id=cell.id, index=cell.index, old_source=old)
        raise BridgeError("replace_cell", f'notebook bridge: replace_cell failed (not_found): no cell with id "{params.cell_id}"', "not_found")

    async def run_cell(self, params: RunCellParams, *, timeout: float | None = None) -> RunCellResponse:
        self.calls.append(("run_cell", (params, timeout)))
        if not params.wait:
            return RunCellResponse(cell_id=params.cell_id, status="queued")
        return RunCellResponse(cell_id=params.cell_id, status="ok", execution_count=2,
                               outputs=[OutputSummary(output_type="stream", text="hello\n")])


class FakeShell:
    def __init__(self) -> None:
        self.execution_count = 7
        self.next_inputs: list[str] = []
        self.user_ns: dict[str, Any] = {}

    def set_next_input(self, text: str, replace: bool = False) -> None:
        self.next_inputs.append(text)


def make(present: bool = True) -> tuple[NotebookTools, FakeBridge, FakeShell, list[tuple[str, str]]]:
    bridge, shell, shown = FakeBridge(present), FakeShell(), []
    tools = NotebookTools(bridge, shell=shell, display=lambda md, plain: shown.append((md, plain)))
    return tools, bridge, shell, shown


def spec(tools: NotebookTools, name: str) -> ToolSpec:
    return next(s for s in tools.list_tools() if s.name == name)


def text(result: Any) -> str:
    return result.content[0].text


def test_the_catalogue_is_native_trusted_and_only_reading_skips_approval() -> None:
    tools, *_ = make()
    specs = {s.name: s for s in tools.list_tools()}
    assert list(specs) == ["read_notebook", "insert_cell", "replace_cell", "delete_cell", "move_cell", "run_cell"]
    assert all(s.source == "native" and s.trusted and s.server is None and s.definition_hash for s in specs.values())
    assert ask_reason(specs["read_notebook"], "on-request", remembered=False) is None
    for name in ("insert_cell", "replace_cell", "delete_cell", "move_cell", "run_cell"):
        assert ask_reason(specs[name], "on-request", remembered=False) is not None
    assert specs["insert_cell"].parameters["required"] == ["source"]


async def test_read_notebook_lists_cells_with_ids_for_the_model() -> None:
    tools, *_ = make()
    result = await tools.call_tool(spec(tools, "read_notebook"), {}, CALL)
    assert not result.is_error
    assert text(result).splitlines()[:3] == ["Notebook demo.ipynb: 2 cell(s).", "[0] id=c0 code execution_count=1", "x = 1"]
    assert result.structured["cells"][1]["source"] == "# Title"


async def test_insert_cell_writes_provenance_from_the_call() -> None:
    tools, bridge, *_ = make()
    result = await tools.call_tool(spec(tools, "insert_cell"), {"source": "y = 2", "after_cell_id": "c0"}, CALL)
    assert text(result) == "Inserted a code cell with id n1 at index 1. It has not been run."
    _, params = bridge.calls[0]
    assert params.provenance.model_dump() == {"thread_id": "thr_1", "turn_id": "turn_1", "call_id": "call_1"}
    assert [c.source for c in bridge.cells] == ["x = 1", "y = 2", "# Title"]


async def test_replace_cell_returns_the_old_source_and_errors_are_results() -> None:
    tools, bridge, *_ = make()
    result = await tools.call_tool(spec(tools, "replace_cell"), {"cell_id": "c0", "source": "x = 3"}, CALL)
    assert "Old source:\nx = 1" in text(result) and bridge.cells[0].source == "x = 3"
    assert bridge.calls[0][1].provenance.call_id == "call_1"
    missing = await tools.call_tool(spec(tools, "replace_cell"), {"cell_id": "zz", "source": ""}, CALL)
    assert missing.is_error and 'no cell with id "zz"' in text(missing)


async def test_bad_arguments_are_error_results() -> None:
    tools, bridge, *_ = make()
    result = await tools.call_tool(spec(tools, "insert_cell"), {"source": 3, "colour": "red"}, CALL)
    assert result.is_error and "bad arguments" in text(result) and "colour" in text(result)
    assert bridge.calls == []


async def test_run_cell_waits_for_outputs_unless_the_turn_is_awaited_in_its_cell() -> None:
    tools, bridge, *_ = make()
    result = await tools.call_tool(spec(tools, "run_cell"), {"cell_id": "c0", "timeout_sec": 9}, CALL)
    assert text(result) == "Ran cell c0: status ok, execution_count 2.\noutputs:\n  [stream] hello"
    assert bridge.calls[-1][1][0].wait is True and bridge.calls[-1][1][1] == 9
    with tools.awaited():
        queued = await tools.call_tool(spec(tools, "run_cell"), {"cell_id": "c0"}, CALL)
    assert bridge.calls[-1][1][0].wait is False
    assert queued.structured["status"] == "queued" and "queued" in text(queued)
    assert tools.waiting is False


async def test_without_the_extension_an_awaited_turn_inserts_through_set_next_input() -> None:
    tools, bridge, shell, shown = make(present=False)
    tools.waiting = True
    first = await tools.call_tool(spec(tools, "insert_cell"), {"source": "a = 1"}, CALL)
    second = await tools.call_tool(spec(tools, "insert_cell"), {"source": "b = 2"}, CALL)
    assert first.structured == {"status": "set_next_input", "combined": 1}
    assert "set_next_input" in text(first) and "below the agent cell" in text(first)
    assert second.structured["combined"] == 2 and "combined with 1 earlier" in text(second)
    assert shell.next_inputs == ["a = 1", "a = 1\n\nb = 2"]
    shell.execution_count += 1  # the next run starts a fresh cell
    await tools.call_tool(spec(tools, "insert_cell"), {"source": "# Notes", "cell_type": "markdown"}, CALL)
    assert shell.next_inputs[-1] == "%%markdown\n# Notes"
    assert shown == [] and bridge.calls == []


async def test_without_the_extension_a_background_turn_shows_the_code_with_a_note() -> None:
    tools, bridge, shell, shown = make(present=False)
    result = await tools.call_tool(spec(tools, "insert_cell"), {"source": "print('```')"}, CALL)
    assert result.structured == {"status": "shown"} and not result.is_error
    assert "nothing was written" in text(result)
    markdown, plain = shown[0]
    assert "could not write to the notebook" in markdown and "````python\nprint('```')\n````" in markdown
    replaced = await tools.call_tool(spec(tools, "replace_cell"), {"cell_id": "c0", "source": "x = 9"}, CALL)
    assert "could not replace cell c0" in text(replaced) and "Replace cell `c0` with" in shown[1][0]
    assert shell.next_inputs == []


async def test_without_the_extension_run_cell_says_to_use_run_python() -> None:
    tools, *_ = make(present=False)
    result = await tools.call_tool(spec(tools, "run_cell"), {"cell_id": "c0"}, CALL)
    assert result.is_error and "run_python" in text(result)


async def test_without_the_extension_read_notebook_falls_back_to_the_saved_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tools, *_ = make(present=False)
    missing = await tools.call_tool(spec(tools, "read_notebook"), {}, CALL)
    assert missing.is_error and "cannot be read" in text(missing)
    path = tmp_path / "saved.ipynb"
    path.write_text(json.dumps({
        "cells": [{"id": "s1", "cell_type": "code", "source": ["print(", "1)"], "execution_count": 4, "metadata": {},
                   "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1\n"]}]}],
        "metadata": {"nbagent": {"threads": ["thr_9"]}}, "nbformat": 4, "nbformat_minor": 5,
    }))
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    result = await tools.call_tool(spec(tools, "read_notebook"), {}, CALL)
    assert result.structured["status"] == "read_from_file" and result.structured["threads"] == ["thr_9"]
    assert "Read from the saved file" in text(result) and "print(1)" in text(result) and "[stream] 1" in text(result)


async def test_after_the_notebooks_tab_closed_writes_say_no_page_was_seen_not_that_the_extension_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page answered in this kernel, then its tab closed: while the bridge keeps its "no page"
    verdict, a write is refused saying so and naming the saved file, never shown or queued as
    for a front end without the extension (no page would show either)."""
    now, closed = [100.0], [False]

    def page(request: dict) -> dict | None:
        if closed[0]:
            return None if request["method"] == "hello" else GONE
        return ok(request, HELLO if request["method"] == "hello" else {"cell_id": "n1", "index": 1})

    saved = tmp_path / "demo.ipynb"
    saved.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    monkeypatch.setenv("JPY_SESSION_NAME", str(saved))
    shell, shown = FakeShell(), []
    bridge = NotebookBridge(FakeFactory(page), ack_timeout=0.05, hello_timeout=0.05, clock=lambda: now[0])
    tools = NotebookTools(bridge, shell=shell, display=lambda md, plain: shown.append((md, plain)))
    insert = spec(tools, "insert_cell")
    assert not (await tools.call_tool(insert, {"source": "a = 1"}, CALL)).is_error
    closed[0], now[0] = True, 112.0
    first = await tools.call_tool(insert, {"source": "b = 2"}, CALL)
    assert first.is_error and "is not open in a browser tab" in text(first)
    now[0], tools.waiting = 117.0, True
    later = await tools.call_tool(insert, {"source": "c = 3"}, CALL)
    assert later.is_error and "not active" not in text(later), text(later)
    assert "no open page of this notebook was seen in the last 17 s" in text(later) and str(saved) in text(later)
    read = await tools.call_tool(spec(tools, "read_notebook"), {}, CALL)
    assert read.structured["status"] == "read_from_file" and "not active" not in text(read), text(read)
    assert shown == [] and shell.next_inputs == []
