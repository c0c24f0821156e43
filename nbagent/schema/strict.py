"""Strict mode: a sanitised schema made strict, only where that keeps its meaning."""

from __future__ import annotations

from typing import Any

from nbagent.schema.check import openai_schema_problems
from nbagent.schema.subset import MAX_DEPTH, MAX_ENUM, STRICT_FORMATS, STRICT_KEYWORDS


def make_strict(schema: dict[str, Any], *, sanitised: bool = False) -> dict[str, Any] | None:
    """A strict-mode copy of a *sanitised* schema, or ``None`` when strict would change its meaning.

    Strict mode needs every property required and ``additionalProperties: false``. Closing an
    object only narrows what the model may send, so absent ``additionalProperties`` is set to
    false; but an optional property or an open map cannot be made strict without forcing the
    model to invent values, and a keyword strict mode lacks cannot be dropped without letting
    invalid arguments through. ``title``/``default`` (annotations) are dropped.

    ``sanitised`` says ``schema`` is ``sanitize_schema``'s output, which the API checker already
    accepts (the sanitiser's fuzz test holds it to that), so checking it again is skipped.
    """
    if not sanitised and openai_schema_problems(schema):
        return None
    try:
        return _strict(schema, 0)
    except _NotStrict:
        return None


class _NotStrict(Exception):
    pass


def _strict(s: dict[str, Any], depth: int) -> dict[str, Any]:
    if depth > MAX_DEPTH:
        raise _NotStrict
    out: dict[str, Any] = {}
    for k, v in s.items():
        if k in ("title", "default"):
            continue
        if k not in STRICT_KEYWORDS:
            raise _NotStrict
        if k == "format" and v not in STRICT_FORMATS:
            raise _NotStrict
        if k == "enum" and len(v) > MAX_ENUM:
            raise _NotStrict
        out[k] = v
    types = s.get("type")
    types = [types] if isinstance(types, str) else types or []
    if "object" in types:
        props = s.get("properties")
        if not props or s.get("additionalProperties", False) is not False:
            raise _NotStrict
        if set(s.get("required", [])) != set(props):
            raise _NotStrict
        out["properties"] = {k: _strict(v, depth + 1) for k, v in props.items()}
        out["additionalProperties"] = False
    if "items" in s:
        out["items"] = _strict(s["items"], depth + 1)
    if "anyOf" in s:
        if depth == 0:
            raise _NotStrict
        out["anyOf"] = [_strict(b, depth + 1) for b in s["anyOf"]]
    return out

