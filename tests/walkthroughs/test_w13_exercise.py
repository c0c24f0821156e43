"""13-lifecycle-and-state's exercise check, run as its cell runs (the walkthrough's own source, a
run's startup updates as the ``of_type`` it reads): the intended answer passes, and each kind of
wrong answer is refused with a hint that points at the mistake without giving the answer."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent.examples.walkthroughs import kit
from nbagent.examples.walkthroughs.w13_lifecycle_and_state import CHECK, WALKTHROUGH
from nbagent.protocol import McpStartupUpdate

UPDATES = [
    McpStartupUpdate(server="broken", status="starting"),
    McpStartupUpdate(server="broken", status="failed", error="exit code 2", stderr_tail="STATION_KEY is not set"),
    McpStartupUpdate(server="life", status="starting"),
    McpStartupUpdate(server="life", status="ready", tools=3),
]


def _check(answer_line: str) -> None:
    space: dict[str, Any] = {"of_type": lambda kind: UPDATES if kind == "mcp_startup_update" else [], "check": kit.check}
    exec(answer_line, space)
    exec(CHECK, space)


def test_the_intended_answer_passes(capsys: pytest.CaptureFixture[str]) -> None:
    _check(WALKTHROUGH.answer)
    assert capsys.readouterr().out.startswith("Right.")


@pytest.mark.parametrize(
    ("answer_line", "hint"),
    [
        (WALKTHROUGH.wrong_answer, "a restart count is off"),
        ("answer = lambda ups: {u['server']: (ups[0]['status'], 0) for u in ups}", "a final status is wrong"),
        ("answer = lambda ups: {s: ([u['status'] for u in ups if u['server'] == s][-1], "
         "sum(u['status'] == 'starting' for u in ups if u['server'] == s) - 1) "
         "for s in {u['server'] for u in ups if u['status'] == 'starting'}}", "some server is missing or extra"),
        ("answer = {}", "it should be the function itself"),
        ("answer = lambda ups: [(u['server'], u['status']) for u in ups]", "return a dict keyed by server name"),
        ("answer = lambda ups: {u.server: (u.status, 0) for u in ups}", "it raised AttributeError"),
    ],
    ids=["first-start-counted", "first-status", "servers-missed", "not-a-function", "not-a-dict", "attribute-access"],
)
def test_a_wrong_answer_is_refused_with_a_hint(answer_line: str, hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(AssertionError, match="^Not yet: ") as refused:
        _check(answer_line)
    assert hint in str(refused.value)
    assert not capsys.readouterr().out, "a refusal prints nothing, the answer least of all"


def test_the_unanswered_exercise_says_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    _check("answer = ...")
    assert capsys.readouterr().out.startswith("Exercise:")
