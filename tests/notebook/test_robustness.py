"""What must never hang a turn or lose what the user should see (each a fix with its test):
broken server schemas, widget callbacks that raise, calls from outside agents, unanswerable
terminal prompts and the terminal's "is this cell complete?" check."""

from __future__ import annotations

from typing import Any

from IPython.core.inputtransformer2 import TransformerManager

from nbagent.mcp.checks import argument_problems
from nbagent.notebook.agent import KernelAgent
from nbagent.notebook.approval import ApprovalPanel
from nbagent.notebook.elicitation import ElicitationForm
from nbagent.notebook.render import WidgetTurn
from nbagent.notebook.text_ask import ask_approval, ask_elicitation
from nbagent.notebook.transform import rewrite
from nbagent.protocol import (
    ApprovalDecision,
    ApprovalRequested,
    ElicitationRequested,
    Event,
    ToolCallBegin,
    ToolCallEnd,
    TurnStarted,
)

BROKEN = {"type": "object", "properties": {"x": {"type": "frobnicate"}}}


def test_a_broken_input_schema_does_not_disable_approve():
    assert argument_problems(BROKEN, {"x": 1}) == []  # jsonschema raises UnknownType while validating
    sent: list[Any] = []
    panel = ApprovalPanel(ApprovalRequested(call_id="c1", tool="t", arguments={"x": 1}, input_schema=BROKEN), sent.append)
    panel.buttons["approve"].click()
    assert [(o.call_id, o.decision) for o in sent] == [("c1", "approve")]


def test_a_raising_click_shows_its_error_in_the_panel_and_leaves_it_usable(monkeypatch):
    sent: list[ApprovalDecision] = []
    panel = ApprovalPanel(ApprovalRequested(call_id="c1", tool="t", arguments={}), sent.append)
    monkeypatch.setattr(panel, "edited_arguments", lambda: (_ for _ in ()).throw(RuntimeError("boom")))
    panel.buttons["approve"].click()  # ipywidgets would print the traceback where nobody sees it
    assert "this decision failed: RuntimeError: boom" in panel.problems.value
    assert not panel.buttons["deny"].disabled
    panel.buttons["deny"].click()
    assert [o.decision for o in sent] == ["deny"]


def test_a_raising_answer_or_stop_is_shown_too(monkeypatch):
    form = ElicitationForm(ElicitationRequested(request_id="r1", server="s", mode="url", message="m", url="https://x.test"),
                           lambda op: None)
    monkeypatch.setattr(form, "respond", lambda action: 1 / 0)
    form.buttons["accept"].click()
    assert "this answer failed: ZeroDivisionError" in form.problems.value
    view = WidgetTurn(lambda op: None, stop=lambda: {}["missing"], model_label="m", scripted=True, thread="t", policy="p")
    view.stop_button.click()
    assert "Stop failed: KeyError" in view.status.value


class Seen:
    def __init__(self) -> None:
        self.done = False
        self.events: list[Any] = []

    def handle(self, event: Any) -> None:
        self.events.append(event)


def test_calls_from_outside_agents_render_in_the_serving_cell():
    agent = KernelAgent(shell=None)
    agent.outside_view = outside = Seen()
    begin = ToolCallBegin(call_id="c1", tool="t", arguments={}, entry="notebook_server")
    approval = ApprovalRequested(call_id="c1", tool="t", arguments={})
    end = ToolCallEnd(call_id="c1", tool="t", output="ok", duration_ms=1.0)
    # an outside call is a one-call turn of its own
    sent = [Event(seq=n, turn_id="call_turn_1", msg=msg) for n, msg in enumerate((begin, approval, end), 1)]
    for event in sent:
        agent._on_event(event)
    assert outside.events == sent
    # a turn run from Python code (no view) is not an outside agent's call
    agent._on_event(Event(turn_id="turn_py", msg=ToolCallBegin(call_id="c2", tool="t", arguments={}, entry="python")))
    agent._on_event(Event(msg=TurnStarted(prompt="p", entry="python", model="m", policy="never")))
    assert outside.events == sent


def answers(*replies: Any):
    it = iter(replies)

    def prompt(_text: str) -> str:
        reply = next(it)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    return prompt


def test_unanswerable_terminal_prompts_end_the_wait():
    req = ApprovalRequested(call_id="c1", tool="t", arguments={})
    assert ask_approval(answers(EOFError()), req)[0] == "deny"
    assert ask_approval(answers(KeyboardInterrupt()), req)[0] == "abort"
    assert ask_approval(answers("s"), req) == ("approve_session", None)
    form = ElicitationRequested(request_id="r", server="s", message="m", requested_schema={
        "type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]})
    said: list[str] = []
    assert ask_elicitation(answers(EOFError()), said.append, form) == ("decline", None)
    assert ask_elicitation(answers("y", KeyboardInterrupt()), said.append, form) == ("cancel", None)
    assert ask_elicitation(answers("y", "0", "x", "0"), said.append, form) == ("cancel", None)  # 3 bad tries
    said.clear()
    assert ask_elicitation(answers("y", "0", "2"), said.append, form) == ("accept", {"n": 2})
    assert said == ["  ✖ n: field 'n': 0 is below the minimum 1"]  # told why, asked again
    url = ElicitationRequested(request_id="u", server="s", mode="url", message="m", url="https://x.test")
    assert ask_elicitation(answers("a"), said.append, url) == ("accept", None)


def test_the_terminal_prompt_skips_an_optional_field_no_value_can_satisfy_saying_why():
    form = ElicitationRequested(request_id="r", server="s", message="m", requested_schema={"type": "object", "properties": {
        "rate": {"type": "number", "minimum": 1.5, "maximum": 0.5}, "n": {"type": "integer"}}})  # fmt: skip
    said: list[str] = []
    assert ask_elicitation(answers("y", "3"), said.append, form) == ("accept", {"n": 3})  # never asked for rate
    assert said == ["  rate: left empty, the server's schema allows no value (minimum 1.5 is above the maximum 0.5, "
                    "so no value can satisfy it)"]


def test_an_agent_cell_line_alone_is_not_complete():
    tm = TransformerManager()
    tm.cleanup_transforms.append(rewrite)
    assert tm.check_complete("%%agent --wait")[0] == "incomplete"  # Enter adds a line, not runs it
    assert tm.check_complete("%%agent --wait\nWrite a note\n\n")[0] == "complete"
    assert tm.transform_cell("%%agent --wait\nWrite a note\n") == "await _nbagent_cell('--wait', 'Write a note\\n')\n"
