"""10-many-tools' exercise check, run as its cell runs (the walkthrough's own source): an answer of
the wrong type is refused with a hint saying what shape the answer has, before any comparison (no
TypeError, nothing printed)."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent.examples.walkthroughs import kit
from nbagent.examples.walkthroughs.w10_many_tools import CHECK


@pytest.mark.parametrize(
    "answer_line",
    ['answer = "create_pull_request"', "answer = 4", 'answer = ("create_pull_request",)', "answer = [None]"],
    ids=["a-string", "a-number", "a-tuple", "not-names"],
)
def test_an_answer_of_the_wrong_type_is_refused_with_a_hint(answer_line: str, capsys: pytest.CaptureFixture[str]) -> None:
    space: dict[str, Any] = {"session": None, "check": kit.check}  # refused before the session is read
    exec(answer_line, space)
    with pytest.raises(AssertionError, match="^Not yet: `answer` is a .*; give a list of raw tool names"):
        exec(CHECK, space)
    assert not capsys.readouterr().out
