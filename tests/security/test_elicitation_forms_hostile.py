"""Elicitation forms a careless or hostile MCP server gets wrong, answered through the real form.

A real server (tests/servers/elicit_forms.py) asks; a real ``Session`` (scripted model) carries the
question; the notebook's ``ElicitationForm`` shows it and a person edits and clicks. What the
person submitted is exactly what the server receives and the thread records as theirs (a default
the person cleared is not put back); an answer the session turns down leaves the form open saying
why; a form that cannot be built never leaves the turn waiting out its timeout.

Questions wait up to 120 s for an answer while each test has 60 s: a question left waiting shows
as a test timeout, never as a slow pass.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from nbagent import Session
from nbagent.mcp.elicitation import validate_content
from nbagent.notebook import elicitation as form_module
from nbagent.notebook.elicitation import ElicitationForm
from nbagent.protocol import ElicitationRequested, ElicitationResolved, Event
from nbagent.protocol.elicitation import ElicitationSchemaError, elicitation_fields
from tests.core.conftest import home  # noqa: F401 - fixture
from tests.mcp.conftest import records, server_cfg

pytestmark = pytest.mark.timeout(60)

WAIT = 120.0
"""How long a question waits for its answer: longer than a test may run."""


class Notebook:
    """The notebook front end of one session: a real form per question (``views`` forms each,
    as two open views of one notebook show), told how each question ended."""

    def __init__(self, session: Session, views: int = 1) -> None:
        self.session = session
        self.views = views
        self.forms: list[ElicitationForm] = []
        self.resolved: list[ElicitationResolved] = []
        self.warnings: list[str] = []
        self.asked = asyncio.Event()
        session.subscribe(self._on_event)

    def _on_event(self, event: Event) -> None:
        msg = event.msg
        if isinstance(msg, ElicitationRequested):
            self.forms += [ElicitationForm(msg, self.session.submit) for _ in range(self.views)]
            self.asked.set()
        elif isinstance(msg, ElicitationResolved):
            self.resolved.append(msg)
            for form in self.forms:
                if form.request_id == msg.request_id:
                    form.on_resolved(msg)
        elif msg.type == "warning":
            self.warnings.append(msg.message)  # type: ignore[union-attr]


async def ask(tmp_path: Path, tool: str, person: Any = None, views: int = 1) -> tuple[list[dict], list[Any], Notebook]:
    """Run one turn that calls ``tool``; ``person(notebook)`` acts once the form is shown.
    Returns what the server recorded, the thread's elicitation items and the front end."""
    record = tmp_path / "record.jsonl"
    model = tmp_path / f"{tool}.json"
    model.write_text(json.dumps({"responses": [{"tool_calls": [{"name": f"mcp__forms__{tool}", "arguments": {}}]},
                                               {"text": "done"}]}))
    servers = {"forms": server_cfg("elicit_forms.py", record, protocol="legacy")}
    async with Session(model=f"replay:{model}", policy="full-auto", mcp_servers=servers, interactive=True) as session:
        session._config.elicitation_timeout_sec = WAIT
        notebook = Notebook(session, views)
        run = asyncio.ensure_future(session.run("go"))
        if person is not None:
            shown = asyncio.ensure_future(notebook.asked.wait())
            await asyncio.wait({shown, run}, return_when="FIRST_COMPLETED")
            shown.cancel()
            if notebook.asked.is_set():
                person(notebook)
        result = await run
        items = [i for i in session._thread.items if i.type == "elicitation"]
    assert result.ok, result.error
    return records(record), items, notebook


def said(form: ElicitationForm) -> str:
    """What the collapsed form says happened."""
    return form.record.value


# -- 1. a default the person cleared is not sent -------------------------------------------------


async def test_a_default_the_person_cleared_is_not_sent_or_recorded_as_theirs(home: Path, tmp_path: Path) -> None:  # noqa: F811
    def clear_and_accept(notebook: Notebook) -> None:
        form = notebook.forms[0]
        assert form.inputs["note"].value == "DROP TABLE users"  # the form pre-fills the default
        form.inputs["note"].value = ""  # the person clears it
        form.buttons["accept"].click()

    got, items, notebook = await ask(tmp_path, "ask_default", clear_and_accept)
    assert [(r["action"], r["content"]) for r in got] == [("accept", {})], "the server got a value the person removed"
    assert [(i.action, i.by, i.content) for i in items] == [("accept", "user", {})]
    assert "answered by you" in said(notebook.forms[0])


async def test_a_default_the_person_keeps_is_sent_as_theirs(home: Path, tmp_path: Path) -> None:  # noqa: F811
    got, items, _ = await ask(tmp_path, "ask_default", lambda nb: nb.forms[0].buttons["accept"].click())
    assert [(r["action"], r["content"]) for r in got] == [("accept", {"note": "DROP TABLE users"})]
    assert [(i.by, i.content) for i in items] == [("user", {"note": "DROP TABLE users"})]


# -- 2. what Accept lets through, the session takes; what it refuses, the form says --------------


async def test_clearing_an_invalid_default_sends_the_cleared_answer_at_once(home: Path, tmp_path: Path) -> None:  # noqa: F811
    def clear_and_accept(notebook: Notebook) -> None:
        form = notebook.forms[0]
        form.inputs["email"].value = ""
        assert form.respond("accept") is True

    got, items, notebook = await ask(tmp_path, "ask_email", clear_and_accept)
    assert [(r["action"], r["content"]) for r in got] == [("accept", {})]
    assert [(i.action, i.by) for i in items] == [("accept", "user")]
    assert not [w for w in notebook.warnings if "refused" in w]


async def test_an_answer_the_session_turns_down_leaves_the_form_open_saying_why(home: Path, tmp_path: Path) -> None:  # noqa: F811
    """Two views of the notebook show the same question; the person answers in the first, then,
    before the session has moved on, in the second. The session takes only the first: the second
    form must not claim its answer was sent."""
    seen: dict[str, Any] = {}

    def answer_twice(notebook: Notebook) -> None:
        first, second = notebook.forms
        first.inputs["note"].value = "first"
        assert first.respond("accept") is True
        second.inputs["note"].value = "second"
        seen["accepted"] = second.respond("accept")
        seen["sent"] = second.sent
        seen["open"] = second.body.layout.display != "none" and not second.buttons["accept"].disabled
        seen["problems"] = second.problems.value

    got, items, _ = await ask(tmp_path, "ask_default", answer_twice, views=2)
    assert seen["accepted"] is False and seen["sent"] is None, "the form said an answer was sent that the session refused"
    assert seen["open"] and "no longer waiting" in seen["problems"]
    assert [(r["action"], r["content"]) for r in got] == [("accept", {"note": "first"})]
    assert [(i.by, i.content) for i in items] == [("user", {"note": "first"})]


# -- 3. a required field no value can satisfy: declined at once, naming the server and field ----


async def test_a_required_field_no_value_can_satisfy_is_declined_at_once_saying_why(home: Path, tmp_path: Path) -> None:  # noqa: F811
    got, items, notebook = await ask(tmp_path, "ask_bounds")
    assert [(r["action"], r["content"]) for r in got] == [("decline", None)]
    assert [(i.action, i.by) for i in items] == [("decline", "policy")]
    message = items[0].message or ""
    assert "'forms'" in message and "'n'" in message and "minimum 10 is above the maximum 1" in message, message
    assert notebook.forms == [], "a form no value can satisfy was shown"
    assert [r.message for r in notebook.resolved] == [message]  # what the cell shows


def _shown(widget: Any) -> str:
    """Every text a widget tree shows (labels, hints, placeholders)."""
    text = " ".join(str(getattr(widget, k, "")) for k in ("value", "placeholder") if isinstance(getattr(widget, k, None), str))
    return " ".join([text, *(_shown(child) for child in getattr(widget, "children", ()))])


@pytest.mark.parametrize(
    ("tool", "field", "words"),
    [("ask_rate", "rate", "minimum 1.5 is above the maximum 0.5"),
     ("ask_lengths", "code", "minLength 8 is above the maxLength 2")],
)
async def test_an_optional_field_no_value_can_satisfy_is_shown_disabled_and_left_empty(
    home: Path, tmp_path: Path, tool: str, field: str, words: str  # noqa: F811
) -> None:
    """Leaving an optional field empty is an answer: the form is shown, that field disabled and
    saying why, and Accept sends the answer without it."""
    seen: dict[str, Any] = {}

    def accept(notebook: Notebook) -> None:
        form = notebook.forms[0]
        seen["disabled"], seen["shown"] = form.inputs[field].disabled, _shown(form.body)
        form.buttons["accept"].click()

    got, items, _ = await ask(tmp_path, tool, accept)
    assert seen["disabled"] and words in seen["shown"], seen
    assert [(r["action"], r["content"]) for r in got] == [("accept", {})]
    assert [(i.action, i.by, i.content) for i in items] == [("accept", "user", {})]
    prop = {"type": "number", "minimum": 1.5, "maximum": 0.5} if tool == "ask_rate" else {
        "type": "string", "minLength": 8, "maxLength": 2}
    value = 1.0 if tool == "ask_rate" else "abcde"
    assert validate_content({"type": "object", "properties": {field: prop}}, {field: value}), "a value no bound allows"


@pytest.mark.parametrize(
    ("prop", "words"),
    [({"type": "integer", "minimum": 0.5, "maximum": 0.9}, "no integer"),
     ({"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 3, "maxItems": 1}, "minItems 3 is above the maxItems 1"),
     ({"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 3}, "more choices than there are options \\(only 2\\)"),
     ({"type": "string", "format": "email", "minLength": 5, "maxLength": 4}, "minLength 5 is above the maxLength 4")],
)
def test_other_constraints_no_value_can_meet_are_schema_errors_when_required(prop: dict, words: str) -> None:
    with pytest.raises(ElicitationSchemaError, match=words):
        elicitation_fields({"type": "object", "properties": {"x": prop}, "required": ["x"]})
    (optional,) = elicitation_fields({"type": "object", "properties": {"x": prop}})
    assert re.search(words, optional.unanswerable or ""), optional


async def test_a_bound_beyond_the_widget_range_still_shows_a_form(home: Path, tmp_path: Path) -> None:  # noqa: F811
    """``minimum`` 2**60 with no maximum is a fine schema; the form must still build."""
    got, _, notebook = await ask(tmp_path, "ask_huge", lambda nb: nb.forms[0].buttons["accept"].click())
    assert notebook.forms[0].schema_error is None
    assert [(r["action"], r["content"]) for r in got] == [("accept", {"n": 2**60})]


async def test_a_form_that_fails_to_build_settles_the_question_at_once(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    """Whatever else makes a widget fail (an ipywidgets trait refusing a value): the question ends
    at once as unanswered, with the reason, instead of waiting out its timeout."""

    def broken(field: Any) -> Any:
        raise RuntimeError("setting max < min")

    monkeypatch.setattr(form_module, "field_widget", broken)
    got, items, notebook = await ask(tmp_path, "ask_default")
    assert [r["action"] for r in got] == ["cancel"]
    assert [(i.action, i.by) for i in items] == [("cancel", "unanswered")]
    assert "'forms'" in (items[0].message or "") and "setting max < min" in (items[0].message or "")
    form = notebook.forms[0]
    assert "cannot be shown" in form.body.children[1].value and form.buttons["accept"].disabled
