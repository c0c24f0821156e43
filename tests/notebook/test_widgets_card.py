"""One card per call, in-process: the approval panel and the server's question live inside the
call's card, the decision ends as one line, and every answer button looks and behaves alike."""

from __future__ import annotations

import json

import ipywidgets as W
import pytest

from nbagent.notebook.buttons import DECISION_CLASS
from nbagent.notebook.render import WidgetTurn
from nbagent.protocol import (
    ApprovalDecision,
    ApprovalRequested,
    ApprovalResolved,
    ElicitationRequested,
    ElicitationResolved,
    Event,
    TextBlock,
    ToolAnnotations,
    ToolCallBegin,
    ToolCallEnd,
    TurnFailed,
)

ARGS = {"name": "hello", "text": "# Hello"}


def view(sent: list) -> WidgetTurn:
    return WidgetTurn(sent.append, model_label="scripted replay: x.json", scripted=True, thread="t1", policy="on-request")


def begin(v: WidgetTurn) -> None:
    v.handle(Event(msg=ToolCallBegin(call_id="c1", tool="mcp__demo__write_note", server="demo", raw_tool="write_note",
                                     title="Write a note", arguments=ARGS)))
    v.handle(Event(msg=ApprovalRequested(call_id="c1", tool="mcp__demo__write_note", server="demo", raw_tool="write_note",
                                         title="Write a note", arguments=ARGS,
                                         annotations=ToolAnnotations(destructive_hint=True), reason="destructive tool")))


def texts(widget: W.Widget) -> list[str]:
    """Every visible HTML/label text under ``widget`` (hidden boxes left out)."""
    if getattr(widget.layout, "display", None) == "none":
        return []
    out = [widget.value] if isinstance(widget, W.HTML) and widget.value else []
    for child in getattr(widget, "children", ()):
        out += texts(child)
    return out


def test_the_approval_panel_is_part_of_the_calls_card_and_names_the_call_once():
    v = view([])
    begin(v)
    card, panel = v.cards["c1"], v.approvals["c1"]
    assert v.body.children == (card.widget,), "one card, no panel beside it"
    assert panel.widget in card.asks.children
    shown = "".join(texts(card.widget))
    assert shown.count("Write a note") == 1 and shown.count("mcp__demo__write_note") == 1
    assert "awaiting approval" in shown and "destructive" in shown
    assert card.arguments.layout.display == "none"  # the editable arguments stand in for them
    assert card.widget.layout.border.startswith("2px")  # the whole card is framed as waiting


@pytest.mark.parametrize(
    ("decision", "line", "status"),
    [("approve", "approved once by you", "running"), ("always", "always approved (saved to config) by you", "running"),
     ("deny", "denied by you — “not today”", "denied")],
)
def test_after_the_decision_the_card_shows_it_as_one_line(decision, line, status):
    sent: list = []
    v = view(sent)
    begin(v)
    panel, card = v.approvals["c1"], v.cards["c1"]
    panel.reason.value = "not today"
    panel.buttons[decision].click()
    v.handle(Event(msg=ApprovalResolved(call_id="c1", decision=decision, by="user", message=sent[0].message)))
    assert [s for s in texts(panel.widget)] == [panel.record.value]
    assert line in panel.record.value and "Write a note" not in panel.record.value
    assert card.status == status and card.arguments.layout.display == ""
    assert card.widget.layout.border.startswith("1px")


def test_edited_arguments_show_in_the_card_as_what_runs():
    sent: list = []
    v = view(sent)
    begin(v)
    v.approvals["c1"].arguments.value = json.dumps({"name": "other", "text": "x"})
    v.approvals["c1"].buttons["approve"].click()
    v.handle(Event(msg=ApprovalResolved(call_id="c1", decision="approve", by="user", arguments=sent[0].arguments)))
    assert "edited by you" in v.cards["c1"].arguments.value and "other" in v.cards["c1"].arguments.value


def test_always_looks_like_its_siblings_and_every_click_gives_the_focus_back():
    sent: list = []
    v = view(sent)
    begin(v)
    buttons = v.approvals["c1"].buttons
    assert all(b.button_style and b.icon and b.layout.width == "auto" for b in buttons.values())
    assert all(DECISION_CLASS in b._dom_classes for b in buttons.values())
    blurred: list = []
    buttons["always"].blur = lambda: blurred.append("always")  # ipywidgets' own blur message
    buttons["always"].click()
    assert blurred == ["always"] and sent == [ApprovalDecision(call_id="c1", decision="always")]


def test_the_servers_question_sits_in_the_card_and_a_decline_says_you_declined():
    sent: list = []
    v = view(sent)
    v.handle(Event(msg=ToolCallBegin(call_id="c2", tool="mcp__demo__log_experiment", server="demo", raw_tool="log_experiment", arguments={})))
    v.handle(Event(msg=ElicitationRequested(request_id="e1", server="demo", message="Details?", call_id="c2",
                                            requested_schema={"type": "object", "properties": {"title": {"type": "string"}}})))
    form = v.forms["e1"]
    assert v.body.children == (v.cards["c2"].widget,) and form.widget in v.cards["c2"].asks.children
    assert all(DECISION_CLASS in b._dom_classes for b in form.buttons.values())
    form.buttons["decline"].click()
    v.handle(Event(msg=ElicitationResolved(request_id="e1", action="decline", by="user")))
    server_said = "Error executing tool log_experiment: Resolver for parameter 'details' could not resolve: elicitation was decline"
    v.handle(Event(msg=ToolCallEnd(call_id="c2", tool="mcp__demo__log_experiment", output=server_said, is_error=True,
                                   status="failed", content=[TextBlock(text=server_said)])))
    assert "you declined the server&#x27;s question</b>, so it did not run" in v.cards["c2"].result.value


def test_a_failed_turn_is_shown_once_and_the_status_wraps():
    v = view([])
    message = "no model configured. Set one of: OPENAI_API_KEY plus a model; " + "a local server's base_url; " * 8
    v.handle(Event(msg=TurnFailed(message=message, code="config")))
    shown = "".join(texts(v.widget))
    assert shown.count("no model configured") == 1
    assert "failed" in v.status.value and "white-space:nowrap" not in v.status.value.split("</span>", 1)[1]
    assert v.status.layout.min_width == "0"

