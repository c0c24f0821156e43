"""Checking what a person typed (edited arguments, answers) against a server's schema (DESIGN §13).

The schema is untrusted: its ``pattern``s may backtrack catastrophically and ``re`` holds the
GIL, so one check could freeze the event loop every server and the kernel share. A check
therefore uses the *sanitised* schema without regular expressions, runs on a worker thread,
and is given a time bound after which the value is refused (never let through unchecked).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

from nbagent.mcp.elicitation import validate_content
from nbagent.mcp.validation import SchemaUnusable, compiled
from nbagent.protocol import ElicitationRequested
from nbagent.schema import sanitize_schema, without_regexes
from nbagent.schema.subset import ok_str

CHECK_SECONDS = 2.0
"""Bound on one check; sanitised, regex-free checks take microseconds."""


def bounded(check: Callable[[], list[str]], what: str, seconds: float = CHECK_SECONDS) -> list[str]:
    """``check()`` on a daemon thread (a stuck one cannot hold up exit); a refusal if it overruns."""
    result: list[list[str]] = []

    def work() -> None:
        try:
            result.append(check())
        except Exception as exc:  # noqa: BLE001 - reported as the problem, never raised into a panel
            result.append([f"{what} could not be checked ({type(exc).__name__}: {exc})"])

    worker = threading.Thread(target=work, name="nbagent-check", daemon=True)
    worker.start()
    worker.join(seconds)
    if not result:
        return [f"{what} could not be checked within {seconds:g} s; refused"]
    return result[0]


MAX_ARGUMENT_DEPTH = 64
"""Arguments nested deeper than this are refused. Every event, approval panel and record that
holds them is serialized by pydantic, which gives up past 255 levels (and reads JSON back no
deeper than 201) with the arguments several levels inside its envelope; no real tool needs 64."""

TOO_DEEP = f"the arguments are nested deeper than {MAX_ARGUMENT_DEPTH} levels"


def unsendable(arguments: dict[str, Any], limit: int = MAX_ARGUMENT_DEPTH) -> str | None:
    """Why ``arguments`` cannot be sent on as the JSON they stand for, naming where in them;
    ``None`` when they can. Three things Python's ``json`` reads but nothing after it can carry:
    nesting past ``limit`` (``TOO_DEEP``); a lone surrogate (``"\\ud800"``), which is not Unicode
    text, so no event, record or request holding it can be encoded; and NaN or Infinity, which
    JSON has no number for, so a server would be sent ``null`` for what the person approved.
    Walked with a stack, not recursion: they may nest deeper than Python's recursion limit."""
    stack: list[tuple[dict[Any, Any] | list[Any], tuple[object, ...]]] = [(arguments, ())]
    while stack:
        item, path = stack.pop()
        if len(path) >= limit:  # a container ``limit`` levels down holds a level more
            return TOO_DEEP
        for key, child in item.items() if isinstance(item, dict) else enumerate(item):
            if isinstance(key, str) and not ok_str(key):
                return f"a name in {_where(path)} {_not_text(key)}"
            if isinstance(child, (dict, list)):
                stack.append((child, (*path, key)))
            elif isinstance(child, str) and not ok_str(child):
                return f"{_where((*path, key))} {_not_text(child)}"
            elif isinstance(child, float) and not math.isfinite(child):
                spelled = "NaN" if child != child else "Infinity" if child > 0 else "-Infinity"
                return f"{_where((*path, key))} is {spelled}, which JSON has no number for"
    return None


def _where(path: tuple[object, ...]) -> str:
    return f"the argument {'/'.join(map(str, path))}" if path else "the arguments"


def _not_text(text: str) -> str:
    """Why ``text`` is refused, with its first lone surrogate as an escape (the character itself
    cannot be shown or sent)."""
    lone = next(ch for ch in text if "\ud800" <= ch <= "\udfff")
    return f"holds a lone surrogate (\\u{ord(lone):04x}), which is not Unicode text"


def argument_problems(schema: dict[str, Any] | None, arguments: Any, root: str = "arguments") -> list[str]:
    """Why ``arguments`` would not satisfy the tool's input schema (empty when they do)."""
    if not isinstance(arguments, dict):
        return [f"{root} must be a JSON object"]
    if (problem := unsendable(arguments)) is not None:  # before any validator recurses into them
        return [f"{root}: {problem}"]
    if not schema:
        return []
    return bounded(lambda: _schema_problems(schema, arguments, root), "the arguments")


def _schema_problems(schema: dict[str, Any], arguments: dict[str, Any], root: str) -> list[str]:
    checked = without_regexes(sanitize_schema(schema)[0])
    try:
        validator = compiled(checked)
    except SchemaUnusable:
        return []  # what the sanitiser let through but the validator rejects cannot stop the user deciding
    return [f"{'/'.join(map(str, e.instance_path)) or root}: {e.message}" for e in validator.iter_errors(arguments)]


def answer_problems(requested_schema: dict[str, Any], content: Any) -> list[str]:
    """Why ``content`` is not a valid answer to the server's question (empty when it is)."""
    return bounded(lambda: validate_content(requested_schema, content), "the answer")


EMPTY_FORM: dict[str, Any] = {"type": "object", "properties": {}}
"""The form a question without a ``requestedSchema`` asks: no fields."""


def form_schema(request: ElicitationRequested) -> dict[str, Any]:
    """The schema a form-mode question asks to be answered against."""
    return request.requested_schema or EMPTY_FORM


def elicitation_answer_problems(request: ElicitationRequested, content: Any) -> list[str]:
    """Why ``content`` is refused as the answer to ``request`` (empty when it is taken). The one
    check: the form runs it on what it is about to send before Accept sends anything, and the
    session runs it on exactly what it was sent, with nothing added in between (a default the
    person cleared stays cleared), so what Accept lets through is what the session takes."""
    return answer_problems(form_schema(request), content)
