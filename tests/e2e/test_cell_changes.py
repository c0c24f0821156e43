"""Browser end-to-end: an agent's change to a notebook cell in real JupyterLab. The approval panel
shows the diff, Deny leaves the cell as it was, an approved proposal changes it, and a cell the
person types into (key by key) after the agent read it is not overwritten: the card and the model
are told. Undo: a cell's badge "Undo" puts back that cell alone, "Undo turn" the rest. Driven by ``ui-tests/cell_changes.mjs``; the model is the local OpenAI-compatible test
server, so what the model was told is read from the requests it received."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from nbagent.protocol import UndoItem
from tests.checkpoint.test_undo_cli import items
from tests.e2e.test_browser import ARTIFACTS, CHROMIUM, _code, _folder, _told, pytestmark, run_script

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


def _steps() -> list[dict]:
    def replace(source: str) -> dict:
        return {"tool_calls": [{"name": "replace_cell", "arguments": {"cell_id": "target", "source": source}}]}

    return [
        {"tool_calls": [{"name": "read_notebook", "arguments": {}}]},
        replace(PLAN["denied"]), replace(PLAN["approved"]), replace(PLAN["overwrite"]),
        {"tool_calls": [{"name": "move_cell", "arguments": {"cell_id": "keep", "to_index": 3}}]},
        {"tool_calls": [{"name": "delete_cell", "arguments": {"cell_id": "scratch"}}]},
        {"tool_calls": [{"name": "apply_patch", "arguments": {"input": NOTE}}]},
        {"text": PLAN["done"]},
    ]


def test_a_change_is_shown_denied_approved_and_never_overwrites_what_the_person_typed(
    tmp_path: Path, openai_server, lab
) -> None:
    root = _folder(lab, "cell-changes")
    (root / "nbagent.toml").write_text(
        'model = "fake-model"\nmodel_provider = "fake"\napproval_policy = "on-request"\n\n'
        f'[model_providers.fake]\nbase_url = "{openai_server.base_url}"\nenv_key = "NBAGENT_E2E_FAKE_KEY"\n'
    )
    wire = ("%load_ext nbagent\nfrom nbagent.notebook.extension import get_agent\n_session = await get_agent().ready()\n"
            "print('tools:', ', '.join(sorted(s.name for s in _session.snapshot().tools)))")
    target = {**_code(ORIGINAL), "id": "target"}
    scratch = {**_code("print('scratch')"), "id": "scratch", "execution_count": 1,
               "outputs": [{"output_type": "stream", "name": "stdout", "text": "scratch\n"}]}
    (root / "cells.ipynb").write_text(json.dumps({
        "cells": [_code(wire), target, _code("%%agent\nImprove the total."), scratch, {**_code("kept = True"), "id": "keep", "metadata": {"nbagent": FORGED}}],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }))
    openai_server.script(_steps())
    artifacts = ARTIFACTS.parent / "cell-changes"
    shutil.rmtree(artifacts, ignore_errors=True)
    env = dict(os.environ, NBAGENT_E2E_URL=lab.url, NBAGENT_E2E_TOKEN=lab.token, NBAGENT_E2E_NOTEBOOK="cell-changes/cells.ipynb",
               NBAGENT_E2E_PLAN=json.dumps(PLAN), NBAGENT_E2E_ARTIFACTS=str(artifacts), CHROMIUM=CHROMIUM)
    result = run_script("cell_changes.mjs", env, lab, timeout=300)

    assert result["afterDeny"] == ORIGINAL
    assert result["afterApprove"] == PLAN["approved"]
    kept = PLAN["approved"] + PLAN["typed"]
    assert result["afterConflict"] == kept  # not one key lost, nothing overwritten
    assert "the person edited cell target" in result["cardText"], result["cardText"]
    assert [c["id"] for c in result["cells"][1:]] == ["target", result["cells"][2]["id"], "keep"]  # moved, then deleted
    assert "scratch" not in [c["id"] for c in result["cells"]]
    read, denied, approved, conflict, move, delete, _patch = _told(openai_server.requests)
    assert "id=target" in read and "denied" in denied.lower()
    assert "Replaced the source of cell target" in approved
    assert "the person edited cell target" in conflict and kept in conflict  # the model sees their edit
    assert "Moved cell keep from index 4 to index 3" in move
    assert "Deleted cell scratch" in delete and "print('scratch')" in delete

    # "Undo turn": refused naming the cell the person typed into; then every cell as before the
    # turn (the deleted one back with its type, the moved one back in place) and the file gone.
    assert "not undone" in result["refused"] and "cell target (edited since)" in result["refused"], result["refused"]
    # The badge's "Undo" on the target cell: it alone is back, the rollout records that call's undo;
    # a badge the kernel did not write gets no "Undo".
    assert result["forgedButtons"] == 0
    assert [c["source"] for c in result["afterBadgeUndo"]] == [ORIGINAL if c["id"] == "target" else c["source"]
                                                                for c in result["cells"]]
    (single, _turn) = items(lab.root.parent / "home", result["badge"]["thread_id"], UndoItem)
    assert single.call_id == result["badge"]["call_id"] and single.cells == ["cell target (its source restored)"]
    assert _turn.call_id is None and not any(c.startswith("cell target ") for c in _turn.cells), _turn.cells
    assert "undid turn" in result["undone"] and "note.txt" in result["undone"], result["undone"]
    after = result["afterUndo"]
    assert [(c["type"], c["source"]) for c in after[1:]] == [
        ("code", ORIGINAL), ("code", "%%agent\nImprove the total."), ("code", "print('scratch')"), ("code", "kept = True")]
    assert after[1]["id"] == "target" and after[4]["id"] == "keep"
    assert not (root / PLAN["note"]).exists()
