"""The diff an approval shows, as text and as the panel's HTML: a cell's source against what the
notebook holds, what happens to its outputs, a long diff folded with how many lines follow."""

from __future__ import annotations

from nbagent.kit.diffview import FOLD_AT, changes_text, diff_lines
from nbagent.notebook.diffview import changes_html
from nbagent.patch import unified_diff
from nbagent.protocol import PatchChange
from nbagent.protocol.bridge import CellInfo, OutputSummary
from nbagent.tools.cell_diff import inserted, replaced

CELL = CellInfo(id="c1", index=2, cell_type="code", source="x = 1\nprint(x)\n",
                outputs=[OutputSummary(output_type="stream", text="1\n")])


def test_a_replaced_cell_is_its_source_diffed_and_says_its_outputs_are_kept() -> None:
    change = replaced(CELL, "x = 2\nprint(x)\n")
    assert (change.kind, change.path) == ("update", "cell c1")
    assert "-x = 1\n+x = 2\n print(x)\n" in change.unified_diff
    assert "--- cell c1 (index 2, now)" in change.unified_diff
    assert change.note == "its output is kept, not cleared: the old source's results stay until the cell runs again"
    two = CELL.model_copy(update={"outputs": CELL.outputs * 2})
    assert replaced(two, "y").note.startswith("its 2 outputs are kept, not cleared")
    assert replaced(CELL.model_copy(update={"outputs": []}), "y").note == ""
    text = changes_text([change])
    assert text.splitlines()[0] == "  M cell c1 +1 −1 (" + change.note + ")"
    assert "  -x = 1\n  +x = 2" in text


def test_an_inserted_cell_is_every_line_added() -> None:
    change = inserted("a\nb", "markdown")
    assert change.kind == "add" and change.path == "new markdown cell"
    assert [line.kind for line in diff_lines(change.unified_diff)] == ["head", "head", "hunk", "add", "add"]


def test_a_cell_source_without_a_final_newline_is_not_marked_as_lacking_one() -> None:
    cell = CELL.model_copy(update={"source": "x = 1\nprint(x)"})
    change = replaced(cell, "x = 2\nprint(x)")
    assert "No newline" not in change.unified_diff
    assert change.unified_diff.endswith("-x = 1\n+x = 2\n print(x)\n")  # the unchanged last line is context
    assert replaced(cell, "x = 1\nprint(y)").unified_diff.endswith("-print(x)\n+print(y)\n")


def test_a_final_newline_added_or_removed_is_marked() -> None:
    cell = CELL.model_copy(update={"source": "x = 1\nprint(x)"})
    added = replaced(cell, "x = 1\nprint(x)\n").unified_diff
    assert added.endswith("-print(x)\n\\ No newline at end of file\n+print(x)\n")
    removed = replaced(CELL, "x = 1\nprint(x)").unified_diff
    assert removed.endswith("-print(x)\n+print(x)\n\\ No newline at end of file\n")


def test_an_unchanged_source_says_so() -> None:
    assert "(no change to its content)" in changes_text([replaced(CELL, CELL.source)])


def test_a_long_diff_is_folded_after_its_first_lines_with_how_many_follow() -> None:
    old = "".join(f"line {i}\n" for i in range(100))
    change = PatchChange(kind="update", path="big.txt", unified_diff=unified_diff(old, old.replace("line", "LINE"), "big.txt"))
    lines = changes_text([change]).splitlines()
    total = len(change.unified_diff.splitlines())
    assert len(lines) == 1 + FOLD_AT + 1 and lines[-1] == f"  … {total - FOLD_AT} more lines"
    html = changes_html([change])
    assert f"<summary><span style=\"color:#6e7781\">… {total - FOLD_AT} more lines</span></summary>" in html
    assert "LINE 99" in html.split("<details>")[1]  # the rest is there, behind the fold


def test_added_and_removed_lines_are_coloured_apart() -> None:
    html = changes_html([replaced(CELL, "x = 2\nprint(x)\n")])
    assert "<div style='background:#ffebe9;color:#cf222e'>-x = 1</div>" in html
    assert "<div style='background:#e6ffec;color:#1a7f37'>+x = 2</div>" in html
