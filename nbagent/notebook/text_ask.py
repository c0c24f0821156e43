"""Questions asked at a terminal's stdin prompt (a ``%%agent --wait`` cell in plain IPython).

While such a cell runs, the terminal cannot take another command (``%agent approve`` would have
to wait for the cell that waits for it), so approvals and elicitations are asked right here.
A closed input (EOF) answers "deny"/"decline" and Ctrl-C answers "abort"/"cancel": a prompt
nobody can answer never leaves the turn waiting forever.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from nbagent.mcp.checks import answer_problems
from nbagent.notebook.elicitation import field_problems
from nbagent.protocol import ApprovalRequested, ElicitationRequested
from nbagent.protocol.elicitation import ElicitationSchemaError, FormField, elicitation_fields

Ask = Callable[[str], str]
Say = Callable[[str], None]
TRIES = 3
"""Invalid form answers are asked again this many times, then the question is cancelled."""

APPROVAL_KEYS = {"y": "approve", "yes": "approve", "s": "approve_session", "session": "approve_session",
                 "a": "abort", "abort": "abort"}


class Unanswerable(Exception):
    """The prompt cannot be answered (closed input or Ctrl-C): ``action`` is what is sent instead."""

    def __init__(self, action: str, why: str) -> None:
        super().__init__(why)
        self.action = action


def _ask(prompt: Ask, text: str, *, on_eof: str, on_interrupt: str) -> str:
    try:
        return prompt(text).strip()
    except EOFError:
        raise Unanswerable(on_eof, "no answer: the terminal's input is closed") from None
    except KeyboardInterrupt:
        raise Unanswerable(on_interrupt, "interrupted at the prompt") from None


def ask_approval(prompt: Ask, e: ApprovalRequested) -> tuple[str, str | None]:
    """``(decision, message)`` from one answer: y / s / n / a (anything else is a denial)."""
    try:
        answer = _ask(prompt, f"approve {e.tool}? [y]es / [s]ession / [n]o / [a]bort: ", on_eof="deny", on_interrupt="abort")
    except Unanswerable as exc:
        return exc.action, str(exc)
    return APPROVAL_KEYS.get(answer.lower(), "deny"), None


def _parse(field: FormField, text: str) -> Any:
    """One typed answer; raises ``ValueError`` with a message for the user."""
    if field.kind == "integer":
        return int(text)
    if field.kind == "number":
        return float(text)
    if field.kind == "boolean":
        if text.lower() in ("y", "yes", "true", "1"):
            return True
        if text.lower() in ("n", "no", "false", "0"):
            return False
        raise ValueError("answer y or n")
    if field.kind in ("enum", "multi_enum"):
        picks = [p.strip() for p in text.split(",")] if field.kind == "multi_enum" else [text]
        values = []
        for pick in picks:
            if pick.isdigit() and 1 <= int(pick) <= len(field.options):
                values.append(field.options[int(pick) - 1][0])
            else:
                match = [v for v, label in field.options if pick in (str(v), label)]
                if not match:
                    raise ValueError(f"{pick!r} is not one of the choices")
                values.append(match[0])
        return values if field.kind == "multi_enum" else values[0]
    return text


def _field_prompt(field: FormField) -> str:
    choices = ""
    if field.options:
        choices = " (" + ", ".join(f"{i}={label}" for i, (_, label) in enumerate(field.options, 1)) + ")"
        if field.kind == "multi_enum":
            choices += ", comma-separated"
    default = f" [{json.dumps(field.default, ensure_ascii=False)}]" if field.default is not None else ""
    need = " *" if field.required else ""
    about = f" — {field.description}" if field.description else ""
    return f"  {field.label}{need}{about}{choices}{default}: "


def _fill(prompt: Ask, say: Say, schema: dict[str, Any], fields: list[FormField]) -> dict[str, Any]:
    """Each field until its answer is valid on its own (``TRIES`` times, then cancelled)."""
    content: dict[str, Any] = {}
    for field in fields:
        if field.unanswerable:
            say(f"  {field.label}: left empty, the server's schema allows no value ({field.unanswerable})")
            continue
        for _ in range(TRIES):
            text = _ask(prompt, _field_prompt(field), on_eof="cancel", on_interrupt="cancel")
            try:
                value = _parse(field, text) if text else field.default
            except ValueError as exc:
                problems = [str(exc)]
            else:
                problems = field_problems(schema, field, value)
            if not problems:
                if value is not None:
                    content[field.name] = value
                break
            for problem in problems:
                say(f"  ✖ {field.label}: {problem}")
        else:
            raise Unanswerable("cancel", f"no valid answer for {field.label} after {TRIES} tries")
    return content


def ask_elicitation(prompt: Ask, say: Say, e: ElicitationRequested) -> tuple[str, dict[str, Any] | None]:
    """``(action, content)``: a URL is only shown (the user opens it); a form is asked field by field."""
    on_eof, on_interrupt = "decline", "cancel"
    try:
        if e.mode == "url":
            answer = _ask(prompt, "done there? [a]ccept / [d]ecline / [c]ancel: ", on_eof=on_eof, on_interrupt=on_interrupt)
            return {"a": "accept", "accept": "accept", "y": "accept", "c": "cancel"}.get(answer.lower(), "decline"), None
        answer = _ask(prompt, "answer? [y]es / [d]ecline / [c]ancel: ", on_eof=on_eof, on_interrupt=on_interrupt)
        if answer.lower() not in ("y", "yes", "a", "accept"):
            return ("cancel" if answer.lower() in ("c", "cancel") else "decline"), None
        schema = e.requested_schema or {"type": "object", "properties": {}}
        try:
            fields = elicitation_fields(schema)
        except ElicitationSchemaError as exc:
            say(f"  ✖ this form cannot be answered: {exc}")
            return "decline", None
        content = _fill(prompt, say, schema, fields)
        problems = answer_problems(schema, content)
        if problems:  # fields valid one by one but not together: nothing sensible to re-ask
            for problem in problems:
                say(f"  ✖ {problem}")
            return "cancel", None
        return "accept", content
    except Unanswerable as exc:
        say(f"  ({exc})")
        return exc.action, None
