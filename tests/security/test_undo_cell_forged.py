"""A badge's "Undo" sends ids the page read from the notebook file, which anyone may edit: the
kernel looks the call up in its own rollout, so a forged call id, a real one under another turn,
a call that changed no cell or one undone already undoes nothing; and what the page sends over the
comm reaches only the handler the agent registered, as a checked ``PageRequest``."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent.checkpoint import UndoRefused
from nbagent.checkpoint.cells import call_undo_op
from nbagent.checkpoint.undo import cells_undone
from nbagent.notebook.bridge import NotebookBridge
from nbagent.protocol.bridge import PageRequest
from tests.bridge.fakes import HELLO, FakeFactory, ok
from tests.checkpoint.test_undo_cells import BEFORE, Notebook, _changed
from tests.waiting import until


@pytest.mark.parametrize(("turn", "call"), [
    ("t1", "call_999"),  # no such call
    ("t2", "call_2"),  # a real call under another turn
    ("t1", "call_0"),  # read_notebook: changed no cell
    ("t1", "call_2'); import os; os.system('x"),
    ("t1", ""),
])
async def test_a_forged_badge_undoes_nothing(turn: str, call: str) -> None:
    notebook = Notebook(BEFORE)
    turns = await _changed(notebook)
    left = notebook.view()
    with pytest.raises(UndoRefused, match="changed no cell in this thread: nothing to undo"):
        await call_undo_op(turns.items, turns.bridge, turn, call)
    assert notebook.view() == left


async def test_a_call_undone_already_is_not_undone_again() -> None:
    notebook = Notebook(BEFORE)
    turns = await _changed(notebook)
    turns.items.append(cells_undone("t1", ["cell a (its source restored)"], "call_2"))
    left = notebook.view()
    with pytest.raises(UndoRefused, match="undone already"):
        await call_undo_op(turns.items, turns.bridge, "t1", "call_2")
    assert notebook.view() == left


async def test_only_a_well_formed_page_request_reaches_the_handler_and_is_answered() -> None:
    seen: list[PageRequest] = []

    def frontend(request: dict[str, Any]) -> dict[str, Any] | None:
        return ok(request, HELLO) if request.get("method") == "hello" else None

    async def handler(request: PageRequest) -> tuple[bool, str]:
        seen.append(request)
        return False, "nothing undone: refused"

    factory = FakeFactory(frontend)
    bridge = NotebookBridge(factory)
    await bridge.connect()
    (comm,) = factory.comms
    for garbage in ({"page_id": 5, "method": "undo_cell"}, {"page_id": "p", "method": "exec"}, {"params": {}}, {}):
        comm.deliver(garbage)
    comm.deliver({"page_id": "p1", "method": "undo_cell", "params": {"call_id": "x"}})  # no handler yet
    await until(lambda: len(comm.sent) >= 2, "the kernel's answer without a handler")
    bridge.serve_page(handler)
    comm.deliver({"page_id": "p2", "method": "undo_cell", "params": {"call_id": "x"}})
    await until(lambda: len(comm.sent) >= 3, "the kernel's answers")
    assert [r.page_id for r in seen] == ["p2"]
    assert comm.sent[1]["page_id"] == "p1" and not comm.sent[1]["ok"] and "%load_ext nbagent" in comm.sent[1]["message"]
    assert comm.sent[2] == {"page_id": "p2", "ok": False, "message": "nothing undone: refused"}
