"""07-events-and-state's exercise check, run as its cell runs (the walkthrough's own source, a
turn's events as the ``events`` it reads): the intended fold passes, and each kind of wrong answer
is refused with a hint that points at the mistake without giving the answer."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent.examples.walkthroughs import kit
from nbagent.examples.walkthroughs.w07_events_and_state import CHECK, WALKTHROUGH
from nbagent.protocol import AgentMessage, Event, ToolCallBegin, ToolCallEnd

EVENTS = [
    Event(seq=1, turn_id="turn_1", msg=ToolCallBegin(call_id="call_1", tool="mcp__workspace__read_file")),
    Event(seq=2, turn_id="turn_1", msg=ToolCallEnd(call_id="call_1", tool="mcp__workspace__read_file", output="# calc")),
    Event(seq=3, turn_id="turn_1", msg=AgentMessage(item_id="msg_1", text="It says calc.add adds two numbers.")),
]


def _check(answer_line: str) -> None:
    space: dict[str, Any] = {"events": EVENTS, "first_turn": "turn_1", "check": kit.check}
    exec(answer_line, space)
    exec(CHECK, space)


def test_the_intended_answer_passes(capsys: pytest.CaptureFixture[str]) -> None:
    _check(WALKTHROUGH.answer)
    assert capsys.readouterr().out.startswith("Right.")


def test_a_written_function_passes(capsys: pytest.CaptureFixture[str]) -> None:
    _check(
        "def ended(events):\n    state = {}\n    for e in events:\n"
        "        if e.msg.type == 'tool_call_begin':\n            state[e.msg.call_id] = 'running'\n"
        "        elif e.msg.type == 'tool_call_end':\n            state[e.msg.call_id] = e.msg.status\n"
        "    return state\nanswer = ended"
    )
    assert capsys.readouterr().out.startswith("Right.")


@pytest.mark.parametrize(
    ("answer_line", "hint"),
    [
        (WALKTHROUGH.wrong_answer, "one entry per call that began"),
        ("answer = lambda events: {e.msg.call_id: e.msg.status for e in events}", "it raised AttributeError"),
        ("answer = lambda events: {e.msg.call_id: ('failed' if e.msg.is_error else 'completed') if e.msg.type == "
         "'tool_call_end' else 'running' for e in events if e.msg.type.startswith('tool_call')}", "a status is off"),
        ("answer = {'call_1': 'completed'}", "it should be the function itself"),
        ("answer = lambda events: [e.msg.call_id for e in events if e.msg.type == 'tool_call_begin']", "return a dict"),
    ],
    ids=["running-missed", "every-event-has-call-id", "status-from-is-error", "not-a-function", "not-a-dict"],
)
def test_a_wrong_answer_is_refused_with_a_hint(answer_line: str, hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(AssertionError, match="^Not yet: ") as refused:
        _check(answer_line)
    assert hint in str(refused.value)
    assert not capsys.readouterr().out, "a refusal prints nothing, the answer least of all"


def test_the_unanswered_exercise_says_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    _check("answer = ...")
    assert capsys.readouterr().out.startswith("Exercise:")
