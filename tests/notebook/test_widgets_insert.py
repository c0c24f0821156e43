"""Where the agent writes, on a real kernel: a cell the model inserts without an index or a cell
id goes right below the ``%%agent`` cell that started the turn (the next one below that), never
at the end of the notebook behind the blank cell a user leaves there.

The kernel runs the real magic, session, notebook tools and bridge; the page side is the bridge's
comm answered by a small in-kernel notebook that places cells as the extension does
(``labextension/src/model.ts``: ``after_cell_id`` wins, then ``index``, else the end).
"""

from __future__ import annotations

import pytest

from tests.notebook.harness import HISTORY, Kernel, demo_config, script

pytestmark = pytest.mark.timeout(180)

PAGE = r'''
from tests.bridge.fakes import FakeFactory, HELLO, ok, error
from nbagent.notebook.bridge import get_bridge
_cells = ["setup", "agent-cell", "later", "blank"]
_requests = []
_n = iter(range(1, 100))
def _page(req):
    _requests.append(req)
    if req["method"] == "hello":
        return ok(req, HELLO)
    p = req["params"]
    if p.get("after_cell_id"):
        if p["after_cell_id"] not in _cells:
            return error(req, "not_found", "no cell with id " + p["after_cell_id"])
        at = _cells.index(p["after_cell_id"]) + 1
    elif p.get("index") is not None:
        at = p["index"]
    else:
        at = len(_cells)
    new = f"new-{next(_n)}"
    _cells.insert(at, new)
    return ok(req, {"cell_id": new, "index": at})
get_bridge()._factory = FakeFactory(_page)
'''


def insert(source: str, **where: object) -> dict:
    return {"tool_calls": [{"name": "insert_cell", "arguments": {"source": source, **where}}]}


def run_agent_cell(kernel: Kernel, cell_id: str, body: str) -> None:
    """Run an ``%%agent --wait`` cell the way JupyterLab sends it: with its cell's id."""
    msg = kernel.kc.session.msg("execute_request", {
        "code": body, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False,
        "stop_on_error": True}, metadata={"cellId": cell_id})
    kernel.kc.shell_channel.send(msg)
    assert kernel.reply(msg["header"]["msg_id"], 120)["content"]["status"] == "ok"


@pytest.fixture
def kernel(tmp_path):
    replay = script(tmp_path / "replay.json",
                    insert("first"), insert("second"), insert("at the top", index=0), insert("after setup", after_cell_id="setup"),
                    {"text": "Four cells written."},
                    insert("below the gone cell"), {"text": "done"})
    demo_config(tmp_path, replay, tmp_path / "record.jsonl")
    k = Kernel(tmp_path, env={"NBAGENT_HOME": str(tmp_path / "home")})
    try:
        assert k.execute("%load_ext nbagent")["content"]["status"] == "ok"
        k.run(PAGE)
        yield k
    finally:
        k.close()


def test_insert_below_goes_under_the_agents_cell_unless_told_where(kernel):
    run_agent_cell(kernel, "agent-cell", "%%agent --wait --policy full-auto\nwrite four cells")
    cells = kernel.eval("_cells")
    assert cells == ["new-3", "setup", "new-4", "agent-cell", "new-1", "new-2", "later", "blank"]
    sent = [r["params"] for r in kernel.eval("_requests") if r["method"] == "insert_cell"]
    assert [(p.get("after_cell_id"), p.get("index")) for p in sent] == [
        ("agent-cell", None), ("new-1", None), (None, 0), ("setup", None)]


def test_when_the_agents_cell_is_gone_the_cell_goes_at_the_end(kernel):
    run_agent_cell(kernel, "agent-cell", "%%agent --wait --policy full-auto\nwrite four cells")
    kernel.run("_cells.clear(); _cells.extend(['only', 'blank'])")
    run_agent_cell(kernel, "gone-cell", "%%agent --wait --policy full-auto\none more")
    assert kernel.eval("_cells") == ["only", "blank", "new-5"]
    outputs = [i for i in kernel.eval(HISTORY) if i["type"] == "function_call_output"]
    assert "new-5" in outputs[-1]["output"] and not outputs[-1]["is_error"]
