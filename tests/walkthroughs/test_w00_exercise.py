"""00-the-loop-by-hand's exercise check, run as its cell runs (the walkthrough's own source): the
intended answer passes, and each kind of wrong answer is refused with a hint that points at the
mistake without giving the answer."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent.examples.walkthroughs import kit
from nbagent.examples.walkthroughs.w00_loop_by_hand import CHECK, WALKTHROUGH


def _check(answer_line: str) -> None:
    space: dict[str, Any] = {"check": kit.check}
    exec(answer_line, space)
    exec(CHECK, space)


def test_the_intended_answer_passes(capsys: pytest.CaptureFixture[str]) -> None:
    _check(WALKTHROUGH.answer)
    assert capsys.readouterr().out.startswith("Right.")


@pytest.mark.parametrize(
    ("answer_line", "hint"),
    [
        (WALKTHROUGH.wrong_answer, "that is the Chat Completions shape"),
        ('answer = lambda tool: {"type": "function", "name": tool.title, "description": tool.description, '
         '"parameters": tool.input_schema}', "not its title"),
        ('answer = lambda tool: {"type": "function", "name": tool["name"]}', "it raised TypeError"),
        ('answer = lambda tool: {"type": "function", "name": tool.name, "description": tool.description, '
         '"parameters": {"type": "object"}}', "not its input schema"),
        ('answer = lambda tool: tool', "return a dict"),
        ('answer = {"type": "function"}', "the answer is the function itself"),
    ],
    ids=["chat-shape", "title-for-name", "subscripted", "schema-rebuilt", "not-a-dict", "not-a-function"],
)
def test_a_wrong_answer_is_refused_with_a_hint(answer_line: str, hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(AssertionError, match="^Not yet: ") as refused:
        _check(answer_line)
    assert hint in str(refused.value)
    assert not capsys.readouterr().out, "a refusal prints nothing, the answer least of all"


def test_the_unanswered_exercise_says_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    _check("answer = ...")
    assert capsys.readouterr().out.startswith("Exercise:")
