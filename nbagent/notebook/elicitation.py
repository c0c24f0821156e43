"""The elicitation form: a server asks the user a question mid-call (DESIGN §6).

Form mode renders ``requestedSchema`` as one natural widget per field (from
``nbagent.protocol.elicitation.elicitation_fields``), each pre-filled with the schema's default for
the person to keep, change or clear. It validates inline and again before Accept with
``nbagent.mcp.checks.elicitation_answer_problems``, the very check the session applies to the
answer it is sent, and answers with an ``ElicitationResponse`` holding exactly what the form
shows (a cleared field is left out; nothing fills it back in). Should the session still turn the
answer down, the form stays open and says why. A form that cannot be built says so and ends the
question at once (the ``AskUnanswered`` op). URL mode shows the message and a
link the user opens themselves; nothing here ever opens it.
"""

from __future__ import annotations

import contextlib
import functools
import math
from typing import Any

import ipywidgets as W

from nbagent.mcp.checks import answer_problems, elicitation_answer_problems
from nbagent.notebook.buttons import answer_button, on_answer
from nbagent.notebook.callbacks import guarded
from nbagent.notebook.html import COLORS, esc, link, muted
from nbagent.protocol import AskUnanswered, ElicitationRequested, ElicitationResolved, ElicitationResponse
from nbagent.protocol.elicitation import ElicitationSchemaError, FormField, elicitation_fields
from nbagent.protocol.ops import Submit
from nbagent.textsafe import check_link, describe_for_display, is_link_url

_INT_LIMIT = 2**53
_PLACEHOLDER = {"email": "name@example.com", "uri": "https://…", "date": "YYYY-MM-DD", "date-time": "YYYY-MM-DDTHH:MM:SSZ"}
_UNSET = None


def field_widget(field: FormField) -> W.Widget:
    """The natural widget for one field, its default filled in; a field no value can satisfy is
    shown empty and disabled, saying why."""
    d = field.default
    if field.unanswerable:
        return W.Text(value="", placeholder="cannot be answered: left empty", disabled=True)
    if field.kind in ("string", "email", "uri", "date", "date-time"):
        return W.Text(value=d if isinstance(d, str) else "", placeholder=_PLACEHOLDER.get(field.kind, ""))
    if field.kind == "integer":
        # only integers the bounds allow (minimum 0.5 allows 1, not 0); an open side reaches at
        # least as far as the other bound, so min never passes max (ipywidgets raises)
        lo = math.ceil(field.minimum) if field.minimum is not None else None
        hi = math.floor(field.maximum) if field.maximum is not None else None
        lo = lo if lo is not None else min(-_INT_LIMIT, hi if hi is not None else 0)
        hi = hi if hi is not None else max(_INT_LIMIT, lo)
        value = int(d) if isinstance(d, (int, float)) and not isinstance(d, bool) else 0
        return W.BoundedIntText(value=max(lo, min(value, hi)), min=lo, max=hi)
    if field.kind == "number":
        lo_f = float(field.minimum) if field.minimum is not None else None
        hi_f = float(field.maximum) if field.maximum is not None else None
        lo_f = lo_f if lo_f is not None else min(-float(_INT_LIMIT), hi_f if hi_f is not None else 0.0)
        hi_f = hi_f if hi_f is not None else max(float(_INT_LIMIT), lo_f)
        value_f = float(d) if isinstance(d, (int, float)) and not isinstance(d, bool) else 0.0
        return W.BoundedFloatText(value=max(lo_f, min(value_f, hi_f)), min=lo_f, max=hi_f, step=None)
    if field.kind == "boolean":
        return W.Checkbox(value=bool(d) if isinstance(d, bool) else False, indent=False)
    if field.kind == "enum":
        options: list[tuple[str, Any]] = [(label, value) for value, label in field.options]
        if not field.required and d is None:
            options.insert(0, ("—", _UNSET))
        default = d if any(v == d and type(v) is type(d) for _, v in options) else options[0][1]
        return W.Dropdown(options=options, value=default)
    # multi_enum
    multi = [(label, value) for value, label in field.options]
    chosen = tuple(v for v in (d or []) if any(v == o for _, o in multi)) if isinstance(d, list) else ()
    return W.SelectMultiple(options=multi, value=chosen, rows=min(6, max(2, len(multi))))


def field_value(field: FormField, widget: W.Widget) -> Any:
    """What the widget holds, in the type the schema asks for (``None`` = left empty)."""
    if field.unanswerable:
        return None
    value = widget.value
    if field.kind in ("string", "email", "uri", "date", "date-time"):
        return value if value != "" else None
    if field.kind == "multi_enum":
        # an optional multi-select left empty is "not answered", not "zero choices"
        return list(value) if value or field.required else None
    return value


def help_text(field: FormField) -> str:
    """The muted line beside a field: its description unless it only repeats the label (a
    pydantic model gives ``optimizer`` the title and the description "Optimizer"), and for a
    multi-select how to pick several."""
    parts = []
    if field.unanswerable:
        parts.append(f"the server's schema allows no value ({field.unanswerable})")
    if field.description and field.description.strip().casefold() != field.label.strip().casefold():
        parts.append(field.description)
    if field.kind == "multi_enum":
        limits = [f"at least {field.min_items}" if field.min_items else "", f"at most {field.max_items}" if field.max_items is not None else ""]
        limit = " and ".join(x for x in limits if x)
        parts.append(f"Ctrl-click (⌘-click on a Mac) to pick several{'; ' + limit if limit else ''}")
    return " — ".join(parts)


def _without_field_name(field: FormField, problem: str) -> str:
    """A problem shown beside its own field need not name the field."""
    prefix = f"field {field.name!r}: "
    return problem[len(prefix):] if problem.startswith(prefix) else problem


def field_problems(schema: dict[str, Any], f: FormField, value: Any) -> list[str]:
    """What is wrong with one field's answer (``None`` = left empty), checked on its own."""
    single: dict[str, Any] = {"type": "object", "properties": {f.name: schema["properties"][f.name]}}
    if f.required:
        single["required"] = [f.name]
    return answer_problems(single, {} if value is None else {f.name: value})


class ElicitationForm:
    def __init__(self, event: ElicitationRequested, submit: Submit) -> None:
        self.event = event
        self._submit = submit
        self.sent: str | None = None
        self.resolved: ElicitationResolved | None = None
        self.fields: list[FormField] = []
        self.inputs: dict[str, W.Widget] = {}
        self.messages: dict[str, W.HTML] = {}
        self.problems = W.HTML()
        """The summary line under the form: what keeps Accept from sending, as of now."""
        self._summary_shown = False
        self.schema_error: str | None = None
        header = W.HTML(
            f"<div><b style='color:{COLORS['info']}'>{esc(event.server)} asks</b>: {esc(describe_for_display(event.message))}</div>"
        )
        rows: list[W.Widget] = [header]
        if event.mode == "url":
            rows.append(W.HTML(self._url_html()))
        else:
            rows.extend(self._form_rows())
        self.buttons = {
            "accept": answer_button("Done" if event.mode == "url" else "Accept", "success", "check", "send this answer to the server"),
            "decline": answer_button("Decline", "warning", "ban", "tell the server you do not want to answer"),
            "cancel": answer_button("Cancel", "", "times", "dismiss the question without an answer"),
        }
        if self.schema_error:
            self.buttons["accept"].disabled = True
            # no one can answer it here: the question ends now rather than waiting out its timeout
            why = f"MCP server {event.server!r} asked a question its form could not show ({self.schema_error}): no answer was given."
            with contextlib.suppress(Exception):  # it ended already (answered elsewhere, timed out)
                submit(AskUnanswered(id=event.request_id, reason=why))
        on_click = guarded("this answer", self._show_problem)
        for action, button in self.buttons.items():
            on_answer(button, on_click(lambda a=action: self.respond(a)))
        rows += [self.problems, W.HBox(list(self.buttons.values()))]
        self.body = W.VBox(rows)
        self.record = W.HTML(layout=W.Layout(display="none"))
        self.widget = W.VBox(
            [self.body, self.record],
            layout=W.Layout(border=f"2px solid {COLORS['info']}", padding="4px 8px", margin="4px 0"),
        )

    @property
    def request_id(self) -> str:
        return self.event.request_id

    def _show_problem(self, html: str) -> None:
        self.problems.value = html

    def _url_html(self) -> str:
        """The link, the host it opens on its own line (a label can name any site), and why the
        address may not be the site it reads as."""
        url = self.event.url or ""
        where = ""
        if is_link_url(url):
            checked = check_link(url)
            where = f"<div>It opens <b>{esc(checked.host)}</b></div>" + "".join(
                f"<div style='color:{COLORS['warn']}'>⚠ {esc(w)}</div>" for w in checked.warnings
            )
        return (
            f"<div>Open this link yourself to continue: {link(url)}</div>{where}"
            f"<div>{muted('nbagent never opens it for you. Press Done when finished there.')}</div>"
        )

    def _form_rows(self) -> list[W.Widget]:
        try:
            self.fields = elicitation_fields(self.event.requested_schema or {"type": "object", "properties": {}})
        except ElicitationSchemaError as exc:
            return self._cannot_show(str(exc))
        rows: list[W.Widget] = []
        for f in self.fields:
            try:
                widget = field_widget(f)
            except Exception as exc:  # noqa: BLE001 - e.g. a trait refusing a value: said, never raised into the event flow
                self.inputs.clear()
                self.messages.clear()
                return self._cannot_show(f"field {f.name!r}: {type(exc).__name__}: {exc}")
            self.inputs[f.name] = widget
            star = f" <b style='color:{COLORS['error']}'>*</b>" if f.required else ""
            label = W.HTML(f"{esc(f.label)}{star}", layout=W.Layout(width="12em"))
            message = W.HTML()
            self.messages[f.name] = message
            check = guarded(f"checking {f.label}", functools.partial(setattr, message, "value"))
            widget.observe(check(lambda _c, f=f: self._on_change(f)), names="value")
            hint = help_text(f)
            rows.append(W.HBox([label, widget, W.HTML(muted(hint)) if hint else W.HTML()]))
            rows.append(message)
        return rows

    def _cannot_show(self, why: str) -> list[W.Widget]:
        self.schema_error = why
        self.fields = []
        return [W.HTML(f"<div style='color:{COLORS['error']}'>This form cannot be shown: {esc(why)}</div>")]

    def content(self) -> dict[str, Any]:
        """The answer as the form holds it now; empty optional fields are left out."""
        out: dict[str, Any] = {}
        for f in self.fields:
            value = field_value(f, self.inputs[f.name])
            if value is None:
                continue
            out[f.name] = value
        return out

    def _field_problems(self, f: FormField) -> list[str]:
        return field_problems(self.event.requested_schema or {}, f, field_value(f, self.inputs[f.name]))

    def _check_field(self, f: FormField) -> bool:
        problems = [_without_field_name(f, p) for p in self._field_problems(f)]
        self.messages[f.name].value = "".join(
            f"<div style='color:{COLORS['error']};margin-left:12em'>{esc(p)}</div>" for p in problems
        )
        return not problems

    def _on_change(self, f: FormField) -> None:
        """Every change re-checks its field, and the summary once Accept has shown one, so
        neither ever describes a value that is no longer there."""
        self._check_field(f)
        if self._summary_shown:
            self._show_summary()

    def _show_summary(self) -> list[str]:
        problems = elicitation_answer_problems(self.event, self.content())
        self._summary_shown = bool(problems)
        self.problems.value = "".join(f"<div style='color:{COLORS['error']}'>{esc(p)}</div>" for p in problems)
        return problems

    def respond(self, action: str) -> bool:
        """Send one answer (button click). Accept is refused while the form is invalid."""
        if self.sent is not None or self.resolved is not None:
            return False
        content: dict[str, Any] | None = None
        if action == "accept" and self.event.mode == "form":
            if self.schema_error:
                return False
            for f in self.fields:
                self._check_field(f)
            if self._show_summary():
                return False
            content = self.content()
        self.problems.value = ""
        try:
            self._submit(ElicitationResponse(request_id=self.request_id, action=action, content=content))  # type: ignore[arg-type]  # action: one of the form's buttons
        except Exception as exc:  # the session did not take it (``OpRejected``): still open, saying why
            self.problems.value = f"<div style='color:{COLORS['error']}'>{esc(exc)}</div>"
            return False
        self.sent = action
        self._collapse(action, "by you")
        return True

    def on_resolved(self, event: ElicitationResolved) -> None:
        self.resolved = event
        by = {"user": "by you", "code": "by notebook code", "policy": "by policy", "timeout": "timed out", "interrupt": "interrupted",
              "unanswered": "without an answer"}
        self._collapse(event.action, by.get(event.by, event.by), event.message if event.by not in ("user", "code") else None)

    def _collapse(self, action: str, by: str, why: str | None = None) -> None:
        for button in self.buttons.values():
            button.disabled = True
        for widget in self.inputs.values():
            widget.disabled = True
        verb = {"accept": "answered", "decline": "declined", "cancel": "cancelled"}.get(action, action)
        color = COLORS["ok"] if action == "accept" else COLORS["warn"]
        self.record.value = (
            f"<span style='color:{color}'>{esc(self.event.server)}: “{esc(self.event.message)}” — {esc(verb)} {esc(by)}</span>"
            + (f"<div>{muted(why)}</div>" if why else "")
        )
        self.record.layout.display = ""
        self.body.layout.display = "none"
        self.widget.layout.border = f"1px solid {color}"
