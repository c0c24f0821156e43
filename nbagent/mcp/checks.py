"""Checking what a person typed (edited arguments, answers) against a server's schema (DESIGN §13).

The schema is untrusted: its ``pattern``s may backtrack catastrophically and ``re`` holds the
GIL, so one check could freeze the event loop every server and the kernel share. A check
therefore uses the *sanitised* schema without regular expressions, runs on a worker thread,
and is given a time bound after which the value is refused (never let through unchecked).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from nbagent.calls.arguments import unsendable
from nbagent.mcp.elicitation import validate_content
from nbagent.mcp.validation import SchemaUnusable, compiled
from nbagent.protocol import ElicitationRequested
from nbagent.schema import sanitize_schema, without_regexes

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
