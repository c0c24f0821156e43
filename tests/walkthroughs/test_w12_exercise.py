"""12-review-and-undo's exercise check, run as its cell runs (the walkthrough's own source, this
run's approval as the ``asked`` it reads): the intended answer passes, and each kind of wrong
answer is refused with a hint that points at the mistake without giving the answer."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent.examples.walkthroughs import kit
from nbagent.examples.walkthroughs.w12_review_and_undo import CHECK, WALKTHROUGH
from nbagent.protocol import ApprovalRequested, PatchChange

ASKED = ApprovalRequested(
    call_id="call_1", tool="apply_patch",
    changes=[PatchChange(kind="update", path="project/calc/core.py", unified_diff="@@\n-    return a - b\n+    return a + b\n")],
)  # fmt: skip


def _check(answer_line: str) -> None:
    space: dict[str, Any] = {"asked": ASKED, "check": kit.check}
    exec(answer_line, space)
    exec(CHECK, space)


def test_the_intended_answer_passes(capsys: pytest.CaptureFixture[str]) -> None:
    _check(WALKTHROUGH.answer)
    assert capsys.readouterr().out.startswith("Right.")


@pytest.mark.parametrize(
    ("answer_line", "hint"),
    [
        (WALKTHROUGH.wrong_answer, "return each once, sorted"),
        ('answer = lambda changes: sorted({c["path"] for c in changes})', "which paths does a move touch?"),
        ('answer = sorted(c.path for c in asked.changes)', "it should be the function itself"),
        ('answer = lambda changes: ",".join(c["path"] for c in changes)', "return a list of path strings"),
        ("answer = lambda changes: [c.path for c in changes]", "it raised AttributeError"),
    ],
    ids=["duplicates-unsorted", "moves-missed", "not-a-function", "not-a-list", "attribute-access"],
)
def test_a_wrong_answer_is_refused_with_a_hint(answer_line: str, hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(AssertionError, match="^Not yet: ") as refused:
        _check(answer_line)
    assert hint in str(refused.value)
    assert not capsys.readouterr().out, "a refusal prints nothing, the answer least of all"


def test_the_unanswered_exercise_says_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    _check("answer = ...")
    assert capsys.readouterr().out.startswith("Exercise:")
