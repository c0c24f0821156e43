"""The quickstart executes headlessly (as in CI and ``nbagent demo``) with no error, and really
used the approval and the elicitation; the committed ``.ipynb`` matches its source."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from nbagent.examples.quickstart import build
from nbagent.notebook.demo import run_demo

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(240)


def test_committed_notebook_matches_its_source():
    committed = nbformat.read(str(REPO / "notebooks" / "00-quickstart.ipynb"), as_version=4)
    assert [c.source for c in committed.cells] == [c.source for c in build().cells]


def test_quickstart_runs_headless_without_error(tmp_path, capfd):
    target = run_demo(tmp_path)
    printed, errors = capfd.readouterr()  # capfd: the kernel's own stderr (a child process) too
    assert "without encryption" not in printed + errors  # a warning a demo user cannot act on
    summary = printed[printed.index("nbagent demo:"):]
    assert "turns:     4 turns (4 completed)" in summary and "calls:     4 tool calls" in summary
    assert "approve by user" in summary and "questions: 1 accept by user" in summary
    assert f"executed notebook: {target}" in summary and len(summary.splitlines()) == 6
    executed = nbformat.read(str(target), as_version=4)
    text = ""
    for cell in executed.cells:
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", "".join(out.get("traceback", []))
            text += out.get("text", "") if out["output_type"] == "stream" else ""
    assert "approval call_replay_3_1: approve (user)" in text
    assert "accept (user)" in text and "scripted" in text
    assert text.count("[turn completed]") == 4
    notes = tmp_path / "quickstart-work" / "notes"
    assert (notes / "hello.md").read_text().startswith("# Hello")
    assert "owner_email: you@example.com" in (notes / "experiment-baseline.md").read_text()
