"""The executor the docs site is built from: it runs the quickstart as ``00-quickstart`` with its
widgets rendered, and the widget state it saves is the state at the end (the approval's recorded
decision, not a panel still waiting), with a model for every widget an output shows."""

from __future__ import annotations

import nbformat
import pytest

from nbagent.examples.quickstart import CELLS
from nbagent.examples.walkthroughs.__main__ import QUICKSTART, WIDGET_STATE, execute, names

pytestmark = pytest.mark.timeout(180)


def test_the_quickstart_comes_first():
    assert names()[0] == QUICKSTART


def test_saved_widget_state_is_the_final_one(tmp_path):
    target = execute("00", tmp_path)
    assert target == tmp_path / f"{QUICKSTART}.ipynb"
    nb = nbformat.read(str(target), as_version=4)
    state = nb.metadata.widgets[WIDGET_STATE]["state"]
    html = [m["state"].get("value", "") for m in state.values() if m["model_name"] == "HTMLModel"]
    assert any("approved once by notebook code" in value for value in html), "the approval's decision is not in the saved state"
    assert not any("queued behind the running turn" in v or "waiting for the session" in v for v in html)
    shown = [out["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
             for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
             if "application/vnd.jupyter.widget-view+json" in out.get("data", {})]
    assert shown and all(model_id in state for model_id in shown)
    assert nb.metadata.language_info["pygments_lexer"] == "ipython3"
    assert len(nb.cells) == len(CELLS)  # the probe that read the state is not kept
