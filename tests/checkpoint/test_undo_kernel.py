"""``%agent undo`` in a real kernel (jupyter_client, the replay model): a turn's ``apply_patch``
is put back, the cell says which files, and a second undo says there is nothing left."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.notebook.conftest import make_kernel

__all__ = ["make_kernel"]

pytestmark = pytest.mark.timeout(180)

PATCH = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** Add File: made.txt\n+new\n*** End Patch"


def test_agent_undo_puts_back_the_files_of_the_turn(make_kernel, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    kernel, _ = make_kernel({"tool_calls": [{"name": "apply_patch", "arguments": {"input": PATCH}}]}, {"text": "done"})
    kernel.run("%%agent --wait --policy full-auto\nedit a.txt", ui=False)
    assert (tmp_path / "a.txt").read_text() == "two\n" and (tmp_path / "made.txt").exists()

    cell = kernel.execute("%agent undo", ui=False)["parent_header"]["msg_id"]
    said = kernel.wait_output(cell, "undid turn")
    assert "a.txt" in said and "made.txt" in said
    assert (tmp_path / "a.txt").read_text() == "one\n" and not (tmp_path / "made.txt").exists()

    cell = kernel.execute("%agent undo", ui=False)["parent_header"]["msg_id"]
    assert "no turn of this thread changed workspace files" in kernel.wait_output(cell, "nothing undone")
