"""Applying a patch to real files: every operation, several hunks, Codex's lenient matching, an
error that names the file and the hunk, all or nothing, and the paths a patch may not write."""

from __future__ import annotations

import difflib
import hashlib
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nbagent.patch import PatchError, apply_patch, fold, plan_patch, unified_diff


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"])


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    return root


def apply(work: Path, *body: str) -> list:
    return apply_patch(patch(*body), work, [work])


def test_add_update_delete_and_move_report_each_change(work: Path) -> None:
    (work / "old.py").write_text("a\nb\nc\n")
    (work / "gone.txt").write_text("bye\n")
    (work / "keep.py").write_text("x = 1\n")
    changes = apply(
        work,
        "*** Add File: pkg/new.py", "+print('hi')",
        "*** Update File: old.py", "*** Move to: pkg/moved.py", "@@", " a", "-b", "+B", " c",
        "*** Delete File: gone.txt",
        "*** Update File: keep.py", "@@", "-x = 1", "+x = 2",
    )  # fmt: skip
    assert (work / "pkg/new.py").read_text() == "print('hi')\n"
    assert (work / "pkg/moved.py").read_text() == "a\nB\nc\n" and not (work / "old.py").exists()
    assert not (work / "gone.txt").exists()
    assert (work / "keep.py").read_text() == "x = 2\n"
    assert [(c.kind, c.path, c.move_path, c.counts) for c in changes] == [
        ("add", "pkg/new.py", None, (1, 0)),
        ("move", "old.py", "pkg/moved.py", (1, 1)),
        ("delete", "gone.txt", None, (0, 1)),
        ("update", "keep.py", None, (1, 1)),
    ]
    add, move, delete, update = changes
    assert add.old_hash is None and add.new_hash == hashlib.sha256(b"print('hi')\n").hexdigest()
    assert delete.old_hash == hashlib.sha256(b"bye\n").hexdigest() and delete.new_hash is None
    assert move.diff.startswith("--- old.py\n+++ pkg/moved.py\n@@")
    assert "-x = 1\n+x = 2\n" in update.diff


def test_several_hunks_each_found_after_the_one_before(work: Path) -> None:
    (work / "f.py").write_text("def a():\n    return 1\n\ndef b():\n    return 1\n")
    apply(
        work,
        "*** Update File: f.py",
        "@@ def a():",
        "-    return 1",
        "+    return 10",
        "@@ def b():",
        "-    return 1",
        "+    return 20",
    )
    assert (work / "f.py").read_text() == "def a():\n    return 10\n\ndef b():\n    return 20\n"


def test_end_of_file_hunk_matches_the_last_lines(work: Path) -> None:
    (work / "f").write_text("x\ny\nx\n")
    apply(work, "*** Update File: f", "@@", "-x", "+z", "*** End of File")
    assert (work / "f").read_text() == "x\ny\nz\n"


@pytest.mark.parametrize(
    ("content", "context", "result"),
    [
        ("keep   \nold\t\n", " keep", "keep\nnew\n"),  # trailing whitespace
        ("    keep\n  old\n", " keep", "keep\nnew\n"),  # whitespace at both ends
        ("say \u201chi\u201d \u2014 now\nold\n", ' say "hi" - now', 'say "hi" - now\nnew\n'),  # typographic punctuation
    ],
)
def test_lenient_matching_finds_lines_that_differ_in_whitespace_or_punctuation_and_writes_the_patchs(
    work: Path, content: str, context: str, result: str
) -> None:
    (work / "f").write_text(content)
    apply(work, "*** Update File: f", "@@", context, "-old", "+new")
    assert (work / "f").read_text() == result


def test_a_hunk_that_does_not_match_names_the_file_and_the_hunk_and_changes_nothing(work: Path) -> None:
    (work / "a.py").write_text("one\n")
    (work / "b.py").write_text("def f():\n    return 1\ndef g():\n    return 1\n")
    with pytest.raises(PatchError) as err:
        apply(
            work, "*** Update File: a.py", "@@", "-one", "+ONE",
            "*** Update File: b.py", "@@ def f():", "-    return 1", "+    return 2", "@@ def g():", "-    return 5", "+    return 6",
        )  # fmt: skip
    message = str(err.value)
    assert message.startswith(
        "Failed to find expected lines in b.py: hunk 2 (line 10 of the patch, starting 'def g():')"
    )
    assert "Expected:\n    return 5\n" in message
    assert "Read the file again" in message
    assert (work / "a.py").read_text() == "one\n"  # the first file is untouched


def test_a_missing_context_line_is_named(work: Path) -> None:
    (work / "b.py").write_text("x\n")
    with pytest.raises(PatchError, match=r"hunk 1 .*starting 'def g\(\):'.*'@@ def g\(\):' is not in the file"):
        apply(work, "*** Update File: b.py", "@@ def g():", "-x", "+y")


def test_updating_or_deleting_a_missing_file_is_an_error(work: Path) -> None:
    with pytest.raises(PatchError, match="Failed to read file to update nope.py"):
        apply(work, "*** Update File: nope.py", "@@", "-a", "+b")
    with pytest.raises(PatchError, match="Failed to delete file nope.py"):
        apply(work, "*** Delete File: nope.py")
    with pytest.raises(PatchError, match="No files were modified"):
        apply(work)


def test_a_failure_while_writing_puts_back_the_files_already_written(work: Path) -> None:
    (work / "a.txt").write_text("a\n")
    (work / "b.txt").write_text("b\n")
    plan = plan_patch(
        patch("*** Update File: a.txt", "@@", "-a", "+A", "*** Delete File: b.txt", "*** Add File: sub/c.txt", "+c"),
        work,
        [work],
    )
    (work / "b.txt").unlink()
    (work / "b.txt").mkdir()  # b.txt cannot be unlinked now: the commit fails after a.txt is replaced
    (work / "b.txt" / "inside").write_text("")
    with pytest.raises(PatchError, match="no file was changed"):
        plan.commit()
    assert (work / "a.txt").read_text() == "a\n"
    assert not (work / "sub").exists()
    assert sorted(p.name for p in work.iterdir()) == ["a.txt", "b.txt"]  # no temporary file left


def test_a_crlf_file_keeps_its_line_endings(work: Path) -> None:
    (work / "win.txt").write_bytes(b"a\r\nb\r\nc\r\n")
    apply(work, "*** Update File: win.txt", "@@", " a", "-b", "+B", "+B2", " c")
    assert (work / "win.txt").read_bytes() == b"a\r\nB\r\nB2\r\nc\r\n"


def test_the_mode_of_an_updated_file_is_kept(work: Path) -> None:
    script = work / "run.sh"
    script.write_text("echo a\n")
    script.chmod(0o755)
    apply(work, "*** Update File: run.sh", "@@", "-echo a", "+echo b")
    assert script.stat().st_mode & 0o777 == 0o755


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("../outside.txt", "outside the folders this patch may write"),
        ("/etc/passwd", "absolute paths are refused"),
        ("~/x", "absolute paths are refused"),
        (".git/config", "inside .git"),
        ("sub/.git/hooks/pre-commit", "inside .git"),
        ("link/escape.txt", "it resolves to"),
        ("gitlink/config", "inside .git"),
    ],
)
def test_paths_a_patch_may_not_write_are_refused_before_anything_is_written(work: Path, path: str, why: str) -> None:
    outside = work.parent / "elsewhere"
    outside.mkdir()
    (work / "link").symlink_to(outside)
    (work / ".git").mkdir()
    (work / "gitlink").symlink_to(work / ".git")
    with pytest.raises(PatchError, match=why):
        apply(work, "*** Add File: ok.txt", "+fine", f"*** Add File: {path}", "+bad")
    assert not (work / "ok.txt").exists() and list(outside.iterdir()) == []


def test_a_symlink_inside_the_roots_is_followed(work: Path) -> None:
    (work / "real.txt").write_text("a\n")
    (work / "alias.txt").symlink_to(work / "real.txt")
    apply(work, "*** Update File: alias.txt", "@@", "-a", "+b")
    assert (work / "real.txt").read_text() == "b\n"


def test_a_second_root_may_be_written_and_denied_folders_may_not(tmp_path: Path, work: Path) -> None:
    extra, secret = tmp_path / "extra", work / "secret"
    extra.mkdir()
    secret.mkdir()
    apply_patch(patch("*** Add File: ../extra/x.txt", "+x"), work, [work, extra])
    assert (extra / "x.txt").read_text() == "x\n"
    with pytest.raises(PatchError, match="never written"):
        apply_patch(patch("*** Add File: secret/y.txt", "+y"), work, [work], denied=[secret])


def test_fold_keeps_context_around_changes_and_counts_what_it_folded() -> None:
    old = "".join(f"line {i}\n" for i in range(40))
    new = old.replace("line 20\n", "line twenty\n")
    folded = fold(unified_diff(old, new, "f", context=40), context=2)
    assert "-line 20\n+line twenty\n" in folded.text
    assert "⋯ 18 unchanged lines\n line 18\n" in folded.text and " line 22\n⋯ 17 unchanged lines\n" in folded.text
    assert folded.folded == 35 and "line 17\n" not in folded.text and " line 18\n" in folded.text


def _codex_patch(path: str, old: list[str], new: list[str]) -> str:
    """A patch in Codex's format from difflib's hunks (3 lines of context)."""
    body = [f"*** Update File: {path}"]
    for group in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_grouped_opcodes(3):
        body.append("@@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                body += [" " + line for line in old[i1:i2]]
            else:
                body += ["-" + line for line in old[i1:i2]] + ["+" + line for line in new[j1:j2]]
    return patch(*body)


LINE = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=st.lists(LINE, unique=True, min_size=1, max_size=30), new=st.lists(LINE, max_size=30))
def test_a_patch_made_from_a_diff_gives_the_new_content(work: Path, old: list[str], new: list[str]) -> None:
    target = work / "f.txt"
    target.write_bytes("".join(line + "\n" for line in old).encode())
    if old == new:
        return
    apply_patch(_codex_patch("f.txt", old, new), work, [work])
    assert target.read_bytes().decode() == "".join(line + "\n" for line in new)
    os.unlink(target)
