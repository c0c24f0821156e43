"""A badge's "Undo" sends ids the page read from the notebook file, which anyone may edit: the
kernel looks the call up in its own rollout, so a forged call id, a real one under another turn,
a call that changed no cell or one undone already undoes nothing; and what the page sends over the
comm reaches only the handler the agent registered, as a checked ``PageRequest``. The page's
``check_cells`` (every badge at once when it loads) confirms no more than ``check_cell`` would,
and asks about at most ``MAX_CHECKED_CELLS``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nbagent import Session
from nbagent.checkpoint import UndoRefused
from nbagent.checkpoint.cells import call_undo_op
from nbagent.checkpoint.undo import cells_undone
from nbagent.notebook.agent import KernelAgent
from nbagent.notebook.bridge import NotebookBridge
from nbagent.protocol import FunctionCall
from nbagent.protocol.bridge import MAX_CHECKED_CELLS, PageReply, PageRequest
from tests.bridge.fakes import HELLO, FakeFactory, ok
from tests.checkpoint.test_undo_cells import BEFORE, Notebook, Turns, _changed
from tests.checkpoint.test_undo_cli import call, config_for
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

    async def handler(request: PageRequest) -> PageReply:
        seen.append(request)
        return PageReply(page_id=request.page_id, ok=False, message="nothing undone: refused")

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


async def test_a_loaded_page_asks_for_every_badge_at_once_and_only_this_threads_live_calls_are_confirmed(
        openai_server, tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    ws.mkdir()
    openai_server.script([call("insert_cell", {"source": "z = 1"}), call("replace_cell", {"cell_id": "a", "source": "x = 2"}),
                          {"text": "done"}])
    notebook = Notebook(BEFORE)
    turns = Turns(notebook)
    agent = KernelAgent(shell=None, session_factory=lambda: Session(config=config_for(openai_server, home, ws), cwd=ws))
    factory = FakeFactory(lambda request: ok(request, HELLO) if request.get("method") == "hello" else None)
    page = NotebookBridge(factory)
    page.serve_page(agent.page_request)
    await page.connect()
    (comm,) = factory.comms

    async def check(page_id: str, cells: list[dict[str, str]]) -> dict[str, Any]:
        comm.deliver({"page_id": page_id, "method": "check_cells", "params": {"cells": cells}})
        await until(lambda: any(r.get("page_id") == page_id for r in comm.sent), f"the answer to {page_id}")
        return next(r for r in comm.sent if r.get("page_id") == page_id)

    try:
        session = await agent.ready()
        session.add_provider(turns.tools)
        assert (await session.run("a cell and another")).ok
        thread = session.snapshot().thread_id
        inserted, replaced = ((i.turn_id or "", i.call_id) for i in session.snapshot().items if isinstance(i, FunctionCall))
        await session.perform(await call_undo_op(session.snapshot().items, turns.bridge, *replaced))

        def badge(thread_id: str, turn_id: str, call_id: str) -> dict[str, str]:
            return {"thread_id": thread_id, "turn_id": turn_id, "call_id": call_id}

        answer = await check("p1", [
            badge(thread, *inserted), badge(thread, *replaced),  # made here; the second undone since
            badge(thread, inserted[0], "call_forged"), badge(thread, "turn_other", inserted[1]),
            badge("thread_0123456789abcdef0123", *inserted),  # a real call id under another thread
        ])
        assert answer["ok"] and answer["confirmed"] == [True, False, False, False, False], answer
        full = await check("p2", [badge(thread, *inserted)] * MAX_CHECKED_CELLS)
        assert full["confirmed"] == [True] * MAX_CHECKED_CELLS
        flood = await check("p3", [badge(thread, *inserted)] * 100_000)  # a notebook of forged badges
        assert not flood["ok"] and "confirmed" not in flood, flood
        assert f"at most {MAX_CHECKED_CELLS} items" in flood["message"] and "cells" in flood["message"], flood
    finally:
        await agent.close()
