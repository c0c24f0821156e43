"""08-fix-a-failing-test's exercise check, run as its cell runs (the walkthrough's own source, a
failed run_tests output as the ``outputs`` it reads): the intended function passes on the unseen
reports, and each kind of wrong answer is refused with a hint that points at the mistake."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent.examples.walkthroughs import kit
from nbagent.examples.walkthroughs.w08_fix_a_failing_test import CHECK, WALKTHROUGH
from nbagent.protocol import FunctionCallOutput

REPORT = (
    "Error executing tool run_tests: pytest exited with 1\nF" + " " * 72 + "[100%]\n"
    "=================================== FAILURES ===================================\n"
    ">       assert add(2, 3) == 5\nE       assert -1 == 5\n\ntests/test_core.py:5: AssertionError\n"
    "=========================== short test summary info ============================\n"
    "FAILED tests/test_core.py::test_add - assert -1 == 5\n1 failed in 0.02s"
)
OUTPUTS = {
    "call_1": FunctionCallOutput(call_id="call_1", output=REPORT, is_error=True, status="failed"),
    "call_2": FunctionCallOutput(call_id="call_2", output="def add(a, b):\n    return a - b\n"),
}


def _check(answer_line: str) -> None:
    space: dict[str, Any] = {"outputs": OUTPUTS, "check": kit.check}
    exec(answer_line, space)
    exec(CHECK, space)


def test_the_intended_answer_passes(capsys: pytest.CaptureFixture[str]) -> None:
    _check(WALKTHROUGH.answer)
    assert capsys.readouterr().out.startswith("Right.")


@pytest.mark.parametrize(
    ("answer_line", "hint"),
    [
        (WALKTHROUGH.wrong_answer, "still carries the rest of its line"),
        ("answer = lambda report: [l.split()[1] for l in report.splitlines() if l.startswith('FAILED ')]",
         "return each once, sorted"),
        ("answer = lambda report: sorted(l.split(' - ')[0][7:] for l in report.splitlines() if l.startswith('FAILED') and ' - ' in l)",
         "a failing test is missing or extra"),
        ("answer = lambda report: [report.splitlines()[99]]", "it raised IndexError"),
        ("answer = lambda report: ' '.join(sorted(l.split()[1] for l in report.splitlines() if l.startswith('FAILED')))",
         "return a list of test id strings"),
        ("answer = ['tests/test_core.py::test_add']", "it should be the function itself"),
    ],
    ids=["whole-lines", "unsorted", "dash-lines", "raises", "not-a-list", "not-a-function"],
)
def test_a_wrong_answer_is_refused_with_a_hint(answer_line: str, hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(AssertionError, match="^Not yet: ") as refused:
        _check(answer_line)
    assert hint in str(refused.value)
    assert not capsys.readouterr().out, "a refusal prints nothing, the answer least of all"


def test_the_unanswered_exercise_says_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    _check("answer = ...")
    assert capsys.readouterr().out.startswith("Exercise:")
