"""A server's schema without its regular expressions, for checking values (DESIGN §13).

The schema is untrusted: a ``pattern`` may backtrack catastrophically and ``re`` holds the GIL,
so values are checked against a copy that has none.
"""

from __future__ import annotations

from typing import Any

_SCHEMA_MAPS = ("properties", "$defs", "definitions", "dependentSchemas")
_DATA_KEYS = ("enum", "const", "default", "examples")


def without_regexes(schema: Any) -> Any:
    """A copy of ``schema`` without ``pattern`` and ``patternProperties`` (and, beside the latter,
    ``additionalProperties``/``unevaluatedProperties``, which would match keys against it)."""
    if isinstance(schema, list):
        return [without_regexes(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "pattern" and isinstance(value, str):
            continue
        if key in _DATA_KEYS:
            out[key] = value
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: without_regexes(sub) for name, sub in value.items()}
        else:
            out[key] = without_regexes(value)
    if "patternProperties" in out:
        for key in ("patternProperties", "additionalProperties", "unevaluatedProperties"):
            out.pop(key, None)
    return out

