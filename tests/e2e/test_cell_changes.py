"""Browser end-to-end: an agent's change to a notebook cell in real JupyterLab and in Notebook 7.
The approval panel shows the diff, Deny leaves the cell as it was, an approved proposal changes
it, and "Undo turn" puts back the cell, without the agent's badge, and removes the file the turn
made. In JupyterLab also: a cell the person types into (key by key) after the agent read it is not
overwritten (the card and the model are told), a cell's badge "Undo" puts back that cell alone
and its badge as it was (none), and a deleted cell comes back under its id with its tags. Driven by
``ui-tests/cell_changes.mjs``; the model is the local OpenAI-compatible test server, so what the
model was told is read from the requests it received."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from nbagent.protocol import UndoItem
from tests.checkpoint.test_undo_cli import items
from tests.e2e.jupyter import JupyterLab, agent_notebook, code_cell
from tests.e2e.test_browser import ARTIFACTS, CHROMIUM, _folder, _told, pytestmark, run_script

__all__ = ["pytestmark"]  # the browser tests' skip conditions

ORIGINAL = "total = 1"
PLAN = {
    "target_index": 1, "agent_index": 2, "original": ORIGINAL,
    "denied": "total = 2  # denied", "approved": "total = 3  # approved", "overwrite": "total = 4  # would overwrite",
    "typed": "  # the person typed this", "done": "Cell changes done.",
    "move_shows": "moves from index 4 to index 3", "delete_shows": "the cell is deleted; its output goes too",
    "note": "note.txt",
}
FORGED = {"thread_id": "thread_forged", "turn_id": "turn_forged", "call_id": "call_forged"}  # as anyone may write
NOTE = "*** Begin Patch\n*** Add File: note.txt\n+made by the turn\n*** End Patch"


def _steps(full: bool) -> list[dict]:
    """The model's replies; without ``full``, only the read, the two replacements and the file."""
    def replace(source: str) -> dict:
        return {"tool_calls": [{"name": "replace_cell", "arguments": {"cell_id": "target", "source": source}}]}

    more = [
        replace(PLAN["overwrite"]),
        {"tool_calls": [{"name": "move_cell", "arguments": {"cell_id": "keep", "to_index": 3}}]},
        {"tool_calls": [{"name": "delete_cell", "arguments": {"cell_id": "scratch"}}]},
    ]
    return [
        {"tool_calls": [{"name": "read_notebook", "arguments": {}}]},
        replace(PLAN["denied"]), replace(PLAN["approved"]), *(more if full else []),
        {"tool_calls": [{"name": "apply_patch", "arguments": {"input": NOTE}}]},
        {"text": PLAN["done"]},
    ]


# Notebook 7 runs the lean path (CI time); the person's typing and the badge's Undo are JupyterLab's.
@pytest.mark.parametrize(("ui", "app"), [("lab", "JupyterLab"), ("notebook7", "Jupyter Notebook")])
def test_a_change_is_shown_denied_approved_and_undone(tmp_path: Path, openai_server, lab: JupyterLab, ui: str, app: str) -> None:
    full = ui == "lab"
    target = {**code_cell(ORIGINAL), "id": "target"}
    scratch = {**code_cell("print('scratch')"), "id": "scratch", "execution_count": 1, "metadata": {"tags": ["scratch"]},
               "outputs": [{"output_type": "stream", "name": "stdout", "text": "scratch\n"}]}
    root = _folder(lab, f"cell-changes-{ui}")
    agent_notebook(root / "cells.ipynb", openai_server.base_url, "on-request", [
        target, code_cell("%%agent\nImprove the total."), scratch, {**code_cell("kept = True"), "id": "keep", "metadata": {"nbagent": FORGED}}])
    openai_server.script(_steps(full))
    artifacts = ARTIFACTS.parent / f"cell-changes-{ui}"
    shutil.rmtree(artifacts, ignore_errors=True)
    env = dict(os.environ, NBAGENT_E2E_URL=lab.url, NBAGENT_E2E_TOKEN=lab.token, NBAGENT_E2E_NOTEBOOK=f"cell-changes-{ui}/cells.ipynb",
               NBAGENT_E2E_UI=ui, NBAGENT_E2E_PLAN=json.dumps({**PLAN, "full": full}), NBAGENT_E2E_ARTIFACTS=str(artifacts),
               CHROMIUM=CHROMIUM)
    result = run_script("cell_changes.mjs", env, lab, timeout=300)

    assert result["app"] == app
    assert result["afterDeny"] == ORIGINAL
    assert result["afterApprove"] == PLAN["approved"]
    told = _told(openai_server.requests)
    read, denied, approved = told[:3]
    assert "id=target" in read and "denied" in denied.lower()
    assert "Replaced the source of cell target" in approved
    assert "note.txt" in told[-1], told[-1]
    if full:
        _typing_kept_and_one_cell_undone(lab, result, told[3:6])

    # "Undo turn": every cell as before the turn (in JupyterLab the deleted one back with its
    # type, the moved one back in place) and the file gone.
    assert "undid turn" in result["undone"] and "note.txt" in result["undone"], result["undone"]
    after = result["afterUndo"]
    assert [(c["type"], c["source"]) for c in after[1:]] == [
        ("code", ORIGINAL), ("code", "%%agent\nImprove the total."), ("code", "print('scratch')"), ("code", "kept = True")]
    assert after[1]["id"] == "target" and after[4]["id"] == "keep"
    assert "nbagent" not in after[1]["metadata"] and not after[1]["badge"], after[1]  # the person's cell again
    assert after[4]["metadata"]["nbagent"] == FORGED and after[4]["badge"]  # moved back, its badge as it was
    if full:  # the deleted cell under its id, with its tags, output and count, untrusted
        assert (after[3]["id"], after[3]["metadata"].get("tags")) == ("scratch", ["scratch"]), after[3]
        assert (after[3]["outputs"], after[3]["execution_count"]) == (scratch["outputs"], 1), after[3]
        assert after[3]["metadata"].get("trusted") is not True and not after[3]["trusted"]
    assert not (root / PLAN["note"]).exists()


def _typing_kept_and_one_cell_undone(lab: JupyterLab, result: dict, told: list[str]) -> None:
    """The person's typing survives an approved overwrite; "Undo turn" is refused while it is
    there; the badge's "Undo" puts back the target cell alone."""
    conflict, move, delete = told
    kept = PLAN["approved"] + PLAN["typed"]
    assert result["afterConflict"] == kept  # not one key lost, nothing overwritten
    assert "the person edited cell target" in result["cardText"], result["cardText"]
    assert [c["id"] for c in result["cells"][1:]] == ["target", result["cells"][2]["id"], "keep"]  # moved, then deleted
    assert "scratch" not in [c["id"] for c in result["cells"]]
    assert "the person edited cell target" in conflict and kept in conflict  # the model sees their edit
    assert "Moved cell keep from index 4 to index 3" in move
    assert "Deleted cell scratch" in delete and "print('scratch')" in delete
    # Refused naming the cell the person typed into.
    assert "not undone" in result["refused"] and "cell target (edited since)" in result["refused"], result["refused"]
    # The badge's "Undo" on the target cell: it alone is back, the rollout records that call's undo;
    # a badge the kernel did not write gets no "Undo".
    assert result["forgedButtons"] == 0
    assert [c["source"] for c in result["afterBadgeUndo"]] == [ORIGINAL if c["id"] == "target" else c["source"]
                                                                for c in result["cells"]]
    (back,) = [c for c in result["afterBadgeUndo"] if c["id"] == "target"]
    assert "nbagent" not in back["metadata"] and not back["badge"], back  # no longer shown as the agent's
    (single, turn) = items(lab.root.parent / "home", result["badge"]["thread_id"], UndoItem)
    assert single.call_id == result["badge"]["call_id"] and single.cells == ["cell target (its source restored)"]
    assert turn.call_id is None and not any(c.startswith("cell target ") for c in turn.cells), turn.cells
