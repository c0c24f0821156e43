"""The "Undo turn" button and ``%agent undo`` in a real kernel (jupyter_client, the replay
model): a turn's ``apply_patch`` is put back, the turn's header or the cell says which files,
and an undo with nothing left says so. One kernel for both."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.notebook.conftest import make_kernel
from tests.waiting import wait_for

__all__ = ["make_kernel"]

pytestmark = pytest.mark.timeout(180)

PATCH = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** Add File: made.txt\n+new\n*** End Patch"
EDIT = {"tool_calls": [{"name": "apply_patch", "arguments": {"input": PATCH}}]}


def test_the_header_button_and_agent_undo_put_back_the_files_of_a_turn(make_kernel, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    kernel, _ = make_kernel(EDIT, {"text": "done"}, EDIT, {"text": "done again"})
    kernel.run("%%agent --wait --policy full-auto\nedit a.txt")
    assert (tmp_path / "a.txt").read_text() == "two\n" and (tmp_path / "made.txt").exists()
    kernel.click(kernel.wait_for("ButtonModel", description="Undo turn"))

    def undone() -> str:
        kernel.pump(0.05)
        return next((v for w in kernel.find("HTMLModel") if "undid turn" in (v := w.state.get("value", ""))), "")

    said = wait_for(undone, "the turn's header saying it was undone", timeout=30)
    assert "a.txt" in said and "made.txt" in said
    assert (tmp_path / "a.txt").read_text() == "one\n" and not (tmp_path / "made.txt").exists()
    assert kernel.find("ButtonModel", description="Undo turn")[0].state.get("disabled") is True

    kernel.run("%%agent --wait --policy full-auto\nedit a.txt again", ui=False)
    assert (tmp_path / "a.txt").read_text() == "two\n"
    cell = kernel.execute("%agent undo", ui=False)["parent_header"]["msg_id"]
    said = kernel.wait_output(cell, "undid turn")
    assert "a.txt" in said and "made.txt" in said
    assert (tmp_path / "a.txt").read_text() == "one\n" and not (tmp_path / "made.txt").exists()

    cell = kernel.execute("%agent undo", ui=False)["parent_header"]["msg_id"]
    assert "no turn of this thread changed workspace files" in kernel.wait_output(cell, "nothing undone")
