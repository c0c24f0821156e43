"""10-many-tools' exercise check, run as its cell runs (the walkthrough's own source, a thread that
called one MCP tool as the session it reads): the intended function agrees with
``RequestTools.select`` on catalogues the notebook never built, and each kind of wrong answer is
refused with a hint that points at the part of the request it got wrong."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from nbagent.examples.walkthroughs import kit
from nbagent.examples.walkthroughs.w10_many_tools import CHECK, WALKTHROUGH
from nbagent.protocol import FunctionCall, ToolSpec

OWN = ["apply_patch", "shell", "read_notebook", "insert_cell", "run_python"]
PLATFORM = [ToolSpec(name=f"mcp__platform__{n}", server="platform", raw_name=n)
            for n in ("create_pull_request", "delete_pull_request", "list_issues", "close_issue", "fork_repo")]
OVER_CAP = (
    "def carried(cap, own, in_view):\n    room = cap - 1\n    if len(own) > room:\n        room -= max(1, cap // 4)\n"
    "    return [*own[:room], 'search_tools', *reversed(in_view)]\nanswer = carried"
)
ITEMS = [FunctionCall(call_id="call_1", name="mcp__platform__create_pull_request", arguments="{}")]


def _check(answer_line: str) -> None:
    space: dict[str, Any] = {
        "catalogue": [ToolSpec(name=n) for n in OWN] + PLATFORM, "platform": PLATFORM,
        "session": SimpleNamespace(snapshot=lambda: SimpleNamespace(items=ITEMS)), "check": kit.check,
    }  # fmt: skip
    exec(answer_line, space)
    exec(CHECK, space)


def test_the_intended_answer_passes(capsys: pytest.CaptureFixture[str]) -> None:
    _check(WALKTHROUGH.answer)
    assert capsys.readouterr().out.startswith("Right.")


@pytest.mark.parametrize(
    ("answer_line", "hint"),
    [
        (WALKTHROUGH.wrong_answer, "a quarter of the cap (at least one) stays for tools in view"),
        ("answer = lambda cap, own, in_view: [*own[:cap - 2], 'search_tools', *in_view][:cap]", "newest first"),
        ("answer = lambda cap, own, in_view: [*own[:cap - 2], *reversed(in_view)][:cap]", "search_tools is missing"),
        (OVER_CAP, "at most cap"),
        ("answer = lambda cap, own, in_view: ','.join(own)", "return a list of tool names"),
        ("answer = lambda cap, own, in_view: own[cap + 10]", "it raised IndexError"),
        ('answer = ["mcp__platform__create_pull_request"]', "it should be the function itself"),
    ],
    ids=["no-quarter-kept", "oldest-first", "no-search", "over-cap", "not-a-list", "raises", "not-a-function"],
)
def test_a_wrong_answer_is_refused_with_a_hint(answer_line: str, hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(AssertionError, match="^Not yet: ") as refused:
        _check(answer_line)
    assert hint in str(refused.value)
    assert not capsys.readouterr().out, "a refusal prints nothing, the answer least of all"


def test_the_unanswered_exercise_says_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    _check("answer = ...")
    assert capsys.readouterr().out.startswith("Exercise:")
