"""A notebook executed by nbclient keeps the state of the widgets a turn showed (its approval
panel and tool cards), so a page rendered from the saved notebook shows them: the turn's widget
updates are sent as messages of the cell that started it, not of the cell that opened the session."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat
import pytest

from nbagent.examples.walkthroughs.__main__ import EXECUTOR_ENV
from nbagent.kit.demo import execute

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(180)

CONFIG = f"""
model = "replay:{REPO / 'nbagent' / 'examples' / 'quickstart.json'}"
approval_policy = "on-request"
[mcp_servers.demo]
command = {json.dumps(sys.executable)}
args = ["-m", "nbagent.examples.demo_server", "--dir", "notes"]
"""

ANSWER = """import nbagent.notebook as nb
from nbagent.examples.walkthroughs.kit import autopilot
from nbagent.protocol import ApprovalDecision
session = await nb.ready()
autopilot(session, lambda m: ApprovalDecision(call_id=m.call_id, decision="approve") if m.type == "approval_requested" else None, on=True)"""


def test_the_approval_panel_of_a_wait_cell_is_in_the_saved_widget_state(tmp_path: Path):
    (tmp_path / "nbagent.toml").write_text(CONFIG)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in (
        f"import os; os.environ['NBAGENT_HOME'] = {str(tmp_path / 'home')!r}",
        "%load_ext nbagent",  # the session's tasks start in this cell
        ANSWER,
        "%%agent --wait --policy on-request\nWhat notes do I have?",
    )]
    execute(nb, tmp_path, timeout=120, env=EXECUTOR_ENV, widget_state="nbclient")  # nbclient's own capture
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    html = [m["state"].get("value", "") for m in state.values() if m["model_name"] == "HTMLModel"]
    buttons = {m["state"].get("description") for m in state.values() if m["model_name"] == "ButtonModel"}
    assert any("Approval needed" in h and "list_notes" in h for h in html)
    assert {"Approve", "Deny"} <= buttons
    assert any("approved once by notebook code" in h for h in html)  # the panel's last update, sent from the session's task
    view = nb.cells[3].outputs[0]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
    assert state[view]["state"]["children"], "the turn's view was saved without its children"
