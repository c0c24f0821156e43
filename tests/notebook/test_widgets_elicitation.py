"""The elicitation form in-process: every field kind, defaults, inline validation, every answer."""

from __future__ import annotations

import ipywidgets as W
import pytest

from nbagent.notebook.elicitation import ElicitationForm
from nbagent.protocol import AskUnanswered, ElicitationRequested, ElicitationResolved, ElicitationResponse

SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "title": "Title", "minLength": 3, "maxLength": 10},
        "email": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "day": {"type": "string", "format": "date"},
        "when": {"type": "string", "format": "date-time"},
        "runs": {"type": "integer", "minimum": 1, "maximum": 5, "default": 2},
        "rate": {"type": "number", "minimum": 0, "maximum": 1, "default": 0.5},
        "public": {"type": "boolean", "default": True},
        "color": {"type": "string", "enum": ["red", "green"], "enumNames": ["Red", "Green"]},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}], "default": "l"},
        "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 2, "default": ["b"]},
        "more": {"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}, {"const": "y", "title": "Y"}]}},
    },
    "required": ["title", "email", "color"],
}


def event(**kw) -> ElicitationRequested:
    base = dict(request_id="el_1", server="demo", message="Tell me more", requested_schema=SCHEMA)
    base.update(kw)
    return ElicitationRequested(**base)


@pytest.fixture
def sent() -> list:
    return []


def test_natural_widget_per_kind_with_defaults(sent):
    form = ElicitationForm(event(), sent.append)
    kinds = {name: type(w) for name, w in form.inputs.items()}
    assert kinds == {
        "title": W.Text, "email": W.Text, "site": W.Text, "day": W.Text, "when": W.Text,
        "runs": W.BoundedIntText, "rate": W.BoundedFloatText, "public": W.Checkbox,
        "color": W.Dropdown, "size": W.Dropdown, "tags": W.SelectMultiple, "more": W.SelectMultiple,
    }
    i = form.inputs
    assert (i["runs"].value, i["runs"].min, i["runs"].max) == (2, 1, 5)
    assert i["rate"].value == 0.5 and i["public"].value is True and i["size"].value == "l"
    assert i["tags"].value == ("b",)
    assert [label for label, _ in i["color"].options] == ["Red", "Green"]
    assert [label for label, _ in i["size"].options] == ["Small", "Large"]
    assert "*" in form.body.children[1].children[0].value  # title is required


def fill(form: ElicitationForm) -> None:
    i = form.inputs
    i["title"].value = "abcd"
    i["email"].value = "me@example.com"
    i["site"].value = "https://example.com/x"
    i["day"].value = "2025-02-03"
    i["when"].value = "2025-02-03T10:00:00Z"
    i["runs"].value = 4
    i["rate"].value = 0.25
    i["public"].value = False
    i["color"].value = "green"
    i["size"].value = "s"
    i["tags"].value = ("a", "c")
    i["more"].value = ("y",)


def test_accept_sends_exactly_the_typed_content(sent):
    form = ElicitationForm(event(), sent.append)
    fill(form)
    form.buttons["accept"].click()
    assert sent == [ElicitationResponse(request_id="el_1", action="accept", content={
        "title": "abcd", "email": "me@example.com", "site": "https://example.com/x", "day": "2025-02-03",
        "when": "2025-02-03T10:00:00Z", "runs": 4, "rate": 0.25, "public": False, "color": "green",
        "size": "s", "tags": ["a", "c"], "more": ["y"],
    })]
    assert type(sent[0].content["runs"]) is int and form.body.layout.display == "none"
    assert all(w.disabled for w in form.inputs.values())


def test_empty_optional_fields_are_left_out(sent):
    form = ElicitationForm(event(), sent.append)
    form.inputs["title"].value = "abc"
    form.inputs["email"].value = "a@b.co"
    form.buttons["accept"].click()
    assert set(sent[0].content) == {"title", "email", "runs", "rate", "public", "color", "size", "tags"}


@pytest.mark.parametrize(
    "name, value, problem",
    [("title", "ab", "at least 3"), ("title", "x" * 11, "at most 10"), ("email", "nope", "email"),
     ("site", "not a uri", "URI"), ("day", "2025-13-01", "date"), ("when", "2025-01-01", "date-time"),
     ("tags", ("a", "b", "c"), "at most 2")],
)
def test_inline_validation_blocks_accept(name, value, problem, sent):
    form = ElicitationForm(event(), sent.append)
    fill(form)
    form.inputs[name].value = value
    assert problem in form.messages[name].value  # shown as soon as the value changes
    form.buttons["accept"].click()
    assert sent == [] and problem in form.problems.value
    form.inputs[name].value = form.inputs[name].value if False else {"title": "abcd", "email": "a@b.co", "site": "x:y",
        "day": "2025-01-01", "when": "2025-01-01T00:00:00+01:00", "tags": ("a",)}[name]
    assert form.messages[name].value == ""
    form.buttons["accept"].click()
    assert sent and sent[0].action == "accept"


def test_required_missing(sent):
    form = ElicitationForm(event(), sent.append)
    form.buttons["accept"].click()
    assert sent == [] and "required" in form.problems.value


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_decline_and_cancel_send_no_content(action, sent):
    form = ElicitationForm(event(), sent.append)
    form.buttons[action].click()
    assert sent == [ElicitationResponse(request_id="el_1", action=action)]
    assert ("declined" if action == "decline" else "cancelled") in form.record.value


def test_url_mode_shows_a_link_and_never_opens_it(sent):
    form = ElicitationForm(event(mode="url", url="https://auth.example/x?a=1&b=<2>", requested_schema=None), sent.append)
    html = "".join(getattr(c, "value", "") for c in form.body.children)
    assert 'href="https://auth.example/x?a=1&amp;b=&lt;2&gt;"' in html and 'target="_blank"' in html
    assert "<script" not in html and "window.open" not in html
    form.buttons["accept"].click()
    assert sent == [ElicitationResponse(request_id="el_1", action="accept")]


def test_bad_schema_shows_why_and_only_allows_decline(sent):
    form = ElicitationForm(event(requested_schema={"type": "object", "properties": {"o": {"type": "object"}}}), sent.append)
    assert form.buttons["accept"].disabled and "cannot be shown" in form.body.children[1].value
    # no one can answer it here: the session is told at once, not left to wait out its timeout
    assert sent[0] == AskUnanswered(id="el_1", reason=sent[0].reason) and "could not show" in sent[0].reason
    form.buttons["decline"].click()
    assert sent[-1].action == "decline"


def test_resolved_elsewhere(sent):
    form = ElicitationForm(event(), sent.append)
    form.on_resolved(ElicitationResolved(request_id="el_1", action="cancel", by="timeout"))
    form.buttons["accept"].click()
    assert sent == [] and "timed out" in form.record.value and all(b.disabled for b in form.buttons.values())


def test_typing_key_by_key_clears_the_message_the_moment_the_field_is_valid(sent):
    form = ElicitationForm(event(), sent.append)
    seen = []
    for n in range(1, len("Baseline run") + 1):  # each keystroke is one value update from the page
        form.inputs["title"].value = "Baseline run"[:n]
        seen.append(form.messages["title"].value)
    assert "at least 3 characters required, got 1" in seen[0] and "got 2" in seen[1]
    assert seen[2:10] == [""] * 8  # valid from the third key on: no stale message
    assert "at most 10" in seen[-1]  # and a new problem appears as soon as it is true
    assert "field &#x27;title&#x27;" not in seen[0]  # beside its field, the message need not name it


def test_the_summary_line_follows_the_fields_after_a_refused_accept(sent):
    form = ElicitationForm(event(), sent.append)
    form.buttons["accept"].click()
    assert "&#x27;title&#x27;: required" in form.problems.value and "&#x27;email&#x27;: required" in form.problems.value
    form.inputs["title"].value = "Baseline"
    assert "title" not in form.problems.value and "&#x27;email&#x27;: required" in form.problems.value
    form.inputs["email"].value = "you@example"
    assert "is not an email address" in form.problems.value
    form.inputs["email"].value = "you@example.com"
    assert form.problems.value == ""  # every field valid: no summary left claiming otherwise
    form.buttons["accept"].click()
    assert sent and sent[0].content["email"] == "you@example.com"


def test_help_text_never_repeats_the_label_and_a_multi_select_says_how_to_pick_several(sent):
    schema = {"type": "object", "properties": {
        "optimizer": {"type": "string", "title": "Optimizer", "description": "Optimizer", "enum": ["sgd", "adam"]},
        "runs": {"type": "integer", "title": "Runs", "description": "How many runs"},
        "tags": {"type": "array", "title": "Tags", "description": "Tags", "items": {"enum": ["a", "b"]}, "maxItems": 2},
    }}
    form = ElicitationForm(event(requested_schema=schema), sent.append)
    rows = {f.name: row for f, row in zip(form.fields, form.body.children[1::2], strict=False)}  # the body has rows after the fields
    help_of = {name: row.children[2].value for name, row in rows.items()}
    assert "Optimizer" not in help_of["optimizer"] and "How many runs" in help_of["runs"]
    assert "Tags" not in help_of["tags"] and "pick several" in help_of["tags"] and "at most 2" in help_of["tags"]
