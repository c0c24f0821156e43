"""The quickstart executes headlessly (as in CI) with no error, and really used the approval and
the elicitation; ``nbagent demo`` runs it with its widgets rendered and saves their final state;
the committed ``.ipynb`` matches its source."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from nbagent import Session
from nbagent.examples.quickstart import build
from nbagent.kit.demo import OWNED_MARK, WIDGET_STATE, WORK_DIR, execute, run_demo

REPO = Path(__file__).resolve().parents[2]
HELLO = REPO / "tests" / "fixtures" / "replay_hello.json"
pytestmark = pytest.mark.timeout(240)


def test_committed_notebook_matches_its_source():
    committed = nbformat.read(str(REPO / "notebooks" / "00-quickstart.ipynb"), as_version=4)
    assert [c.source for c in committed.cells] == [c.source for c in build().cells]


def _no_error(nb: nbformat.NotebookNode) -> str:
    """The text the cells printed; an error output fails with its traceback."""
    text = ""
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", "".join(out.get("traceback", []))
            text += out.get("text", "") if out["output_type"] == "stream" else ""
    return text


def test_quickstart_runs_headless_without_error(tmp_path):
    executed = execute(build(), tmp_path, timeout=120)
    text = _no_error(executed)
    assert "front end: headless" in text
    assert "approval call_replay_3_1: approve (code)" in text
    assert "accept (code)" in text and "scripted" in text
    assert text.count("[turn completed]") == 4
    assert "widgets" not in executed.metadata  # nothing rendered, so no widget state
    echoed = [out["data"]["text/plain"] for cell in executed.cells for out in cell.get("outputs", [])
              if out["output_type"] == "execute_result"]
    assert not [text for text in echoed if text.startswith("(")], "a cell echoes a stray tuple"
    notes = tmp_path / "quickstart-work" / "notes"
    assert (notes / "hello.md").read_text().startswith("# Hello")
    assert "owner_email: you@example.com" in (notes / "experiment-baseline.md").read_text()


def test_nbagent_demo_saves_the_panels_with_their_decisions(tmp_path, capfd):
    """Run again over a previous run's work folder: what it left is not counted."""
    left = tmp_path / WORK_DIR
    left.mkdir()
    (left / OWNED_MARK).write_text("")
    Session.run_sync("a turn of an earlier run", model=f"replay:{HELLO}", home=left / "home", cwd=tmp_path)
    target = run_demo(tmp_path)
    printed, errors = capfd.readouterr()  # capfd: the kernel's own stderr (a child process) too
    assert "without encryption" not in printed + errors  # a warning a demo user cannot act on
    summary = printed[printed.index("nbagent demo:"):]
    assert "turns:     4 turns (4 completed)" in summary and "calls:     4 tool calls" in summary
    assert "approve by code" in summary and "questions: 1 accept by code" in summary
    assert f"executed notebook: {target}" in summary and len(summary.splitlines()) == 6
    executed = nbformat.read(str(target), as_version=4)
    assert "front end: widgets" in _no_error(executed)
    state = executed.metadata.widgets[WIDGET_STATE]["state"]
    html = [re.sub("<[^>]+>", "", m["state"].get("value", "")) for m in state.values() if m["model_name"] == "HTMLModel"]
    # what a person opening the notebook sees: the decision and the answer, not a panel still waiting
    assert any("approved once by notebook code" in h for h in html), "the approval's decision is not in the saved state"
    assert any("Details for experiment" in h and "answered by notebook code" in h for h in html)
    assert not any("waiting for" in h or "queued behind the running turn" in h for h in html)
    shown = [out["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
             for cell in executed.cells if cell.cell_type == "code" for out in cell.outputs
             if "application/vnd.jupyter.widget-view+json" in out.get("data", {})]
    assert len(shown) >= 5 and all(model_id in state for model_id in shown)
    assert len(executed.cells) == len(build().cells)  # the probe that read the state is not kept
