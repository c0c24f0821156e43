"""In a real kernel (jupyter_client, the replay model): the approval panel of ``apply_patch``
shows the file's diff, an edit of the patch in the panel is diffed again and is what runs; the
panel of ``replace_cell`` diffs the cell's source against the notebook (its saved file here, no
extension), says its output is kept, and diffs an edited source again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.notebook.harness import Kernel
from tests.waiting import wait_for

pytestmark = pytest.mark.timeout(180)

PATCH = "*** Begin Patch\n*** Update File: app.py\n@@\n-    return 0\n+    return {}\n*** End Patch"
NOTEBOOK = {
    "nbformat": 4, "nbformat_minor": 5, "metadata": {},
    "cells": [{"id": "c1", "cell_type": "code", "source": "x = 1\n", "metadata": {}, "execution_count": 1,
               "outputs": [{"output_type": "stream", "name": "stdout", "text": "1\n"}]}],
}  # fmt: skip


def html_with(kernel: Kernel, *texts: str) -> str:
    def found() -> str:
        kernel.pump(0.05)
        return next((v for w in kernel.find("HTMLModel") if all(t in (v := w.state.get("value", "")) for t in texts)), "")

    return wait_for(found, f"a panel showing {texts}", timeout=60)


def test_the_panel_shows_each_change_as_a_diff_and_an_edited_patch_is_diffed_again(make_kernel, tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("def total(items):\n    return 0\n")
    (tmp_path / "nb.ipynb").write_text(json.dumps(NOTEBOOK))
    patch = {"name": "apply_patch", "arguments": {"input": PATCH.format("sum(items)")}}
    replace = {"name": "replace_cell", "arguments": {"cell_id": "c1", "source": "x = 2\n"}}
    kernel, _ = make_kernel({"tool_calls": [patch]}, {"tool_calls": [replace]}, {"text": "done"},
                            env={"JPY_SESSION_NAME": str(tmp_path / "nb.ipynb")})
    cell = kernel.execute("%%agent --wait\nfix total", wait=False)
    html_with(kernel, "M app.py +1 −1", "-    return 0", "+    return sum(items)")
    editor = kernel.wait_for("TextareaModel", description="arguments")
    kernel.set_state(editor, value=json.dumps({"input": PATCH.format("len(items)")}))
    html_with(kernel, "M app.py +1 −1", "+    return len(items)")
    kernel.click(kernel.find("ButtonModel", description="Approve")[-1])

    shown = html_with(kernel, "M cell c1 +1 −1", "-x = 1", "+x = 2")
    assert "its output is kept, not cleared" in shown
    second = wait_for(lambda: [t for t in kernel.find("TextareaModel", description="arguments") if "x = 2" in t.state["value"]],
                      "the second panel's editor")[-1]
    kernel.set_state(second, value=json.dumps({"cell_id": "c1", "source": "x = 3\ny = x\n"}))
    html_with(kernel, "M cell c1 +2 −1", "-x = 1", "+x = 3", "+y = x")
    kernel.click(wait_for(lambda: [b for b in kernel.find("ButtonModel", description="Deny") if not b.state.get("disabled")],
                          "the second panel's Deny")[-1])
    assert kernel.reply(cell["msg_id"], 60)["content"]["status"] == "ok"
    assert (tmp_path / "app.py").read_text() == "def total(items):\n    return len(items)\n"
    assert json.loads((tmp_path / "nb.ipynb").read_text()) == NOTEBOOK
