"""Codex's patch format, read as Codex reads it: each operation, hunks with and without "@@",
end of file, the lenient cases and the errors a model can act on."""

from __future__ import annotations

import pytest

from nbagent.patch import AddFile, Chunk, DeleteFile, PatchError, UpdateFile, parse_patch


def test_every_operation_in_one_patch() -> None:
    hunks = parse_patch(
        "*** Begin Patch\n*** Add File: path/add.py\n+abc\n+def\n*** Delete File: path/delete.py\n"
        "*** Update File: path/update.py\n*** Move to: path/update2.py\n@@ def f():\n-    pass\n+    return 123\n"
        "*** End Patch"
    )
    assert hunks == [
        AddFile("path/add.py", "abc\ndef\n"),
        DeleteFile("path/delete.py"),
        UpdateFile(
            "path/update.py", "path/update2.py", (Chunk("def f():", ("    pass",), ("    return 123",), False, 8),)
        ),
    ]


def test_first_hunk_may_leave_out_its_marker_and_later_ones_follow_their_context() -> None:
    [hunk] = parse_patch(
        "*** Begin Patch\n*** Update File: a.py\n import foo\n+bar\n@@ class A:\n \n-x\n+y\n*** End of File\n*** End Patch"
    )
    assert isinstance(hunk, UpdateFile)
    first, second = hunk.chunks
    assert (first.context, first.old, first.new) == (None, ("import foo",), ("import foo", "bar"))
    assert (second.context, second.old, second.new, second.end_of_file) == ("class A:", ("", "x"), ("", "y"), True)


def test_an_update_followed_by_another_operation() -> None:
    hunks = parse_patch(
        "*** Begin Patch\n*** Update File: f.py\n@@\n+line\n*** Add File: o.py\n+content\n*** End Patch"
    )
    assert hunks == [UpdateFile("f.py", None, (Chunk(None, (), ("line",), False, 3),)), AddFile("o.py", "content\n")]


def test_markers_with_spaces_around_them_and_a_heredoc_wrapper_are_read() -> None:
    padded = "  *** Begin Patch \n*** Add File: foo\n+hi\n *** End Patch  \n"
    assert parse_patch(padded) == [AddFile("foo", "hi\n")]
    wrapped = "<<'EOF'\n*** Begin Patch\n*** Add File: foo\n+hi\n*** End Patch\nEOF\n"
    assert parse_patch(wrapped) == [AddFile("foo", "hi\n")]


def test_blank_lines_between_hunks_are_skipped() -> None:
    [hunk] = parse_patch("*** Begin Patch\n*** Update File: a\n@@\n-a\n+b\n\n@@\n-c\n+d\n*** End Patch")
    assert isinstance(hunk, UpdateFile)
    assert [c.old for c in hunk.chunks] == [
        (
            "a",
            "",
        ),
        ("c",),
    ]


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ("bad", "invalid patch: The first line of the patch must be '*** Begin Patch'"),
        ("*** Begin Patch\nbad", "invalid patch: The last line of the patch must be '*** End Patch'"),
        (
            "*** Begin Patch\n*** Update File: test.py\n*** End Patch",
            "invalid hunk at line 2, Update file hunk for path 'test.py' is empty",
        ),
        (
            "*** Begin Patch\n*** Frobnicate File: x\n*** End Patch",
            "invalid hunk at line 2, '*** Frobnicate File: x' is not a valid hunk header",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n-a\n@@ x\n*** End Patch",
            "invalid hunk at line 6, Update hunk does not contain any lines",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n?what\n*** End Patch",
            "invalid hunk at line 4, Unexpected line found in update hunk: '?what'",
        ),
        (
            "*** Begin Patch\n*** Update File: a\n@@\n-a\nstray\n*** End Patch",
            "invalid hunk at line 5, Expected update hunk to start with a @@ context marker, got: 'stray'",
        ),
    ],
)
def test_errors_name_the_line_and_what_is_wrong(patch: str, message: str) -> None:
    with pytest.raises(PatchError) as err:
        parse_patch(patch)
    assert str(err.value).startswith(message)


def test_an_empty_patch_has_no_operations() -> None:
    assert parse_patch("*** Begin Patch\n*** End Patch") == []
