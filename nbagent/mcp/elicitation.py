"""Answers to a server's elicitation: checked before they are sent (DESIGN §6).

``validate_content`` checks an answer against the server's ``requestedSchema`` (read through
the form model of ``nbagent.protocol.elicitation``), so a bad answer is refused with a reason
instead of reaching the server. The answer is checked and sent as given: a schema's defaults
are what a front end pre-fills for the person, never added to an answer afterwards (a field the
person cleared must not reach the server as their answer). Pure, and never trusts the schema's
shape.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from typing import Any

from nbagent.protocol.elicitation import ElicitationSchemaError, FormField, elicitation_fields

_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")
_URI_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2}(?:\.\d+)?)([Zz]|[+-]\d{2}:\d{2})$")


def _is_int(v: Any) -> bool:
    """JSON Schema integers: ``3`` and ``3.0`` are, ``True`` is not."""
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and math.isfinite(v) and v.is_integer())


def _is_number(v: Any) -> bool:
    return not isinstance(v, bool) and (isinstance(v, int) or (isinstance(v, float) and math.isfinite(v)))


def _format_problem(kind: str, value: str) -> str | None:
    if kind == "email" and not _EMAIL_RE.fullmatch(value):
        return "is not an email address"
    if kind == "uri" and not _URI_RE.fullmatch(value):
        return "is not a URI (expected scheme:rest)"
    if kind == "date":
        try:
            if not _DATE_RE.fullmatch(value):
                raise ValueError
            _dt.date.fromisoformat(value)
        except ValueError:
            return "is not a date (YYYY-MM-DD)"
    if kind == "date-time":
        m = _DATETIME_RE.fullmatch(value)
        try:
            if not m:
                raise ValueError
            _dt.datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}{'+00:00' if m.group(3) in 'Zz' else m.group(3)}")
        except ValueError:
            return "is not an RFC 3339 date-time with offset (YYYY-MM-DDTHH:MM:SS+00:00)"
    return None


def _same(a: Any, b: Any) -> bool:
    """Option equality that keeps ``True`` and ``1`` apart."""
    return type(a) is type(b) and a == b or (_is_number(a) and _is_number(b) and a == b)


def _field_problems(f: FormField, v: Any) -> list[str]:
    where = f"field {f.name!r}"
    if f.kind in ("string", "email", "uri", "date", "date-time"):
        if not isinstance(v, str):
            return [f"{where}: expected a string, got {type(v).__name__}"]
        problems = []
        if f.min_length is not None and len(v) < f.min_length:
            problems.append(f"{where}: at least {f.min_length} characters required, got {len(v)}")
        if f.max_length is not None and len(v) > f.max_length:
            problems.append(f"{where}: at most {f.max_length} characters allowed, got {len(v)}")
        fp = _format_problem(f.kind, v)
        if fp:
            problems.append(f"{where}: {v!r} {fp}")
        return problems
    if f.kind in ("integer", "number"):
        ok = _is_int(v) if f.kind == "integer" else _is_number(v)
        if not ok:
            return [f"{where}: expected {'an integer' if f.kind == 'integer' else 'a number'}, got {v!r}"]
        problems = []
        if f.minimum is not None and v < f.minimum:
            problems.append(f"{where}: {v!r} is below the minimum {f.minimum!r}")
        if f.maximum is not None and v > f.maximum:
            problems.append(f"{where}: {v!r} is above the maximum {f.maximum!r}")
        return problems
    if f.kind == "boolean":
        return [] if isinstance(v, bool) else [f"{where}: expected true or false, got {v!r}"]
    if f.kind == "enum":
        if not any(_same(v, o) for o in f.values):
            return [f"{where}: {v!r} is not one of the options {f.values!r}"]
        return []
    # multi_enum
    if not isinstance(v, list):
        return [f"{where}: expected a list of options, got {type(v).__name__}"]
    problems = [
        f"{where}: {x!r} is not one of the options {f.values!r}" for x in v if not any(_same(x, o) for o in f.values)
    ]
    if len({repr(x) for x in v}) != len(v):
        problems.append(f"{where}: options may be chosen only once")
    if f.min_items is not None and len(v) < f.min_items:
        problems.append(f"{where}: choose at least {f.min_items}, got {len(v)}")
    if f.max_items is not None and len(v) > f.max_items:
        problems.append(f"{where}: choose at most {f.max_items}, got {len(v)}")
    return problems


def validate_content(requested_schema: dict[str, Any], content: Any) -> list[str]:
    """Everything wrong with ``content`` as an answer to ``requestedSchema``; empty when valid."""
    try:
        fields = elicitation_fields(requested_schema)
    except ElicitationSchemaError as e:
        return [f"the server's schema cannot be answered: {e}"]
    if content is None:
        content = {}
    if not isinstance(content, dict):
        return [f"content must be an object, got {type(content).__name__}"]
    by_name = {f.name: f for f in fields}
    problems = [f"field {k!r}: not in the requested schema" for k in content if k not in by_name]
    for f in fields:
        if f.name not in content or content[f.name] is None:
            if f.required:
                problems.append(f"field {f.name!r}: required")
            continue
        problems.extend(_field_problems(f, content[f.name]))
    return problems


def apply_defaults(requested_schema: dict[str, Any], content: dict[str, Any] | None) -> dict[str, Any]:
    """``content`` with schema defaults filled in for absent fields (a new dict; never raises).

    For code that answers on a person's behalf and chooses to take the server's defaults (a
    script answering from Python): the session never applies it to an answer it is sent."""
    out = dict(content or {})
    try:
        fields = elicitation_fields(requested_schema)
    except ElicitationSchemaError:
        return out
    for f in fields:
        if out.get(f.name) is None and f.default is not None:
            out[f.name] = list(f.default) if isinstance(f.default, list) else f.default
    return out
