"""The approval panel in-process: every decision, edited arguments, validation, resolution elsewhere."""

from __future__ import annotations

import json

import pytest

from nbagent.notebook.approval import ApprovalPanel
from nbagent.protocol import ApprovalDecision, ApprovalRequested, ApprovalResolved, ToolAnnotations

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "minLength": 1}, "text": {"type": "string"}},
    "required": ["name", "text"],
    "additionalProperties": False,
}


def request(**kw) -> ApprovalRequested:
    base = dict(
        call_id="call_1",
        tool="mcp__demo__write_note",
        server="demo",
        raw_tool="write_note",
        title="Write a note",
        description="Create a note\u200b",
        arguments={"name": "a", "text": "hello"},
        input_schema=SCHEMA,
        annotations=ToolAnnotations(destructive_hint=True, open_world_hint=True),
        reason="destructive tool",
    )
    base.update(kw)
    return ApprovalRequested(**base)


@pytest.fixture
def sent() -> list:
    return []


@pytest.mark.parametrize("decision", ["approve", "approve_session", "always", "deny", "abort"])
def test_each_decision_submits_one_op_and_collapses(decision, sent):
    panel = ApprovalPanel(request(), sent.append)
    panel.buttons[decision].click()
    assert sent == [ApprovalDecision(call_id="call_1", decision=decision)]
    assert panel.body.layout.display == "none" and panel.record.layout.display == ""
    assert all(b.disabled for b in panel.buttons.values())
    panel.buttons["approve"].click()  # a second click does nothing
    assert len(sent) == 1


def test_panel_shows_identity_badges_and_reason(sent):
    panel = ApprovalPanel(request(), sent.append)
    html = panel.identity.value + panel.info.value
    for text in ("demo", "write_note", "mcp__demo__write_note", "Write a note", "destructive", "open-world", "destructive tool"):
        assert text in html
    assert "no annotations" in ApprovalPanel(request(annotations=None), sent.append).info.value
    ro = ApprovalPanel(request(annotations=ToolAnnotations(read_only_hint=True)), sent.append).info.value
    assert "read-only" in ro


def test_deny_sends_reason(sent):
    panel = ApprovalPanel(request(), sent.append)
    panel.reason.value = "not today"
    panel.buttons["deny"].click()
    assert sent[0].message == "not today" and sent[0].decision == "deny"
    assert "not today" in panel.record.value


def test_edited_arguments_are_sent_when_valid(sent):
    panel = ApprovalPanel(request(), sent.append)
    panel.arguments.value = json.dumps({"name": "b", "text": "edited"})
    panel.buttons["approve"].click()
    assert sent[0].arguments == {"name": "b", "text": "edited"}
    assert "edited arguments" in panel.record.value


@pytest.mark.parametrize(
    "text, problem",
    [("{not json", "not valid JSON"), (json.dumps({"name": "b"}), "is a required property"),
     (json.dumps({"name": "", "text": "x"}), "name"), ("[1]", "JSON object"),
     (json.dumps({"name": "b", "text": "x", "extra": 1}), "Additional properties"),
     ('{"name": "b", "text": "x", "deep": ' + "[" * 100 + "]" * 100 + "}", "nested deeper than 64 levels"),
     ('{"name": "b", "text": "x", "deep": ' + "[" * 5000 + "]" * 5000 + "}", "nested deeper than 64 levels")],
    ids=["json", "required", "min-length", "array", "additional", "deep", "past-the-parser"],
)
def test_invalid_arguments_block_approval(text, problem, sent):
    panel = ApprovalPanel(request(), sent.append)
    panel.arguments.value = text
    panel.buttons["approve_session"].click()
    assert sent == [] and problem in panel.problems.value
    assert not panel.buttons["approve"].disabled
    panel.buttons["deny"].click()  # deny never needs valid arguments
    assert sent[0].decision == "deny"


def test_resolved_elsewhere_disables_buttons(sent):
    panel = ApprovalPanel(request(), sent.append)
    panel.on_resolved(ApprovalResolved(call_id="call_1", decision="deny", by="interrupt"))
    assert all(b.disabled for b in panel.buttons.values())
    assert "interrupted" in panel.record.value
    panel.buttons["approve"].click()
    assert sent == []


def test_submit_failure_is_shown_not_raised():
    def boom(op):
        raise KeyError("no pending approval call_1")

    panel = ApprovalPanel(request(), boom)
    panel.buttons["approve"].click()
    assert "no pending approval" in panel.problems.value and not panel.buttons["approve"].disabled
