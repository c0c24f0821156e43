"""Browser end-to-end: a committed walkthrough, 04-approval, run as a person runs it in JupyterLab
and in Notebook 7, with Run → Run All Cells from the menu bar. Every cell runs without an error output, the exercise
check cell ends the run saying what to do, and each approval panel shows the decision the
notebook's autopilot makes (its first cell switches it on), with nobody clicking and no ask left
to time out. Driven by
``ui-tests/run_all.mjs``; the model is the walkthrough's own scripted replay, offline."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.e2e.test_browser import ARTIFACTS, CHROMIUM, REPO, _folder, pytestmark, run_script

__all__ = ["pytestmark"]  # the browser tests' skip conditions

NOTEBOOK = "04-approval"


@pytest.mark.parametrize("ui", ["lab", "notebook7"])
def test_run_all_cells_from_the_menu_runs_the_walkthrough_and_its_autopilot_answers_every_panel(lab, ui: str) -> None:
    root = _folder(lab, f"run-all-{ui}")
    shutil.copy(REPO / "notebooks" / f"{NOTEBOOK}.ipynb", root)
    artifacts = ARTIFACTS.parent / f"run-all-{ui}"
    shutil.rmtree(artifacts, ignore_errors=True)
    env = dict(os.environ, NBAGENT_E2E_URL=lab.url, NBAGENT_E2E_TOKEN=lab.token, NBAGENT_E2E_UI=ui,
               NBAGENT_E2E_NOTEBOOK=f"run-all-{ui}/{NOTEBOOK}.ipynb", NBAGENT_E2E_ARTIFACTS=str(artifacts), CHROMIUM=CHROMIUM)
    result = run_script("run_all.mjs", env, lab, timeout=300)

    assert result["first"].startswith("AUTOPILOT = True"), result["first"]
    assert result["errors"] == [], result["errors"]
    assert result["lastPrinted"].startswith("Exercise:"), result["lastPrinted"]
    panels = [line for line in result["decided"] if " · " not in line]  # a card's own line names its tool
    print(f"Run All Cells in {ui}: {result['seconds']} s; the panels: {panels}")
    # What the notebook's autopilot decides (its `click`: wipe and sweep for the session, tidy always, a
    # changed tool denied), in the order the turns ask; nobody clicked, no ask was left to time out.
    assert [line.rsplit(" by ", 1)[0] for line in panels] == [
        "✔ approved for this session", "✔ always approved (saved to config)", "✔ approved for this session", "⊘ denied",
    ], panels
    assert all(line.endswith(" by notebook code") for line in panels), panels  # not "by you": nobody clicked
