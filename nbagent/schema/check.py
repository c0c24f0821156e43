"""What the OpenAI function API (non-strict) would reject in a schema: the bar the sanitiser's
output is held to (the fuzz test uses it), and the gate before strict mode."""

from __future__ import annotations

import json
from typing import Any

from nbagent.schema.subset import ALLOWED_KEYWORDS, JSON_TYPES, MAX_DEPTH, NUMBER_KEYS, is_num, is_scalar


def openai_schema_problems(schema: object) -> list[str]:
    """What the OpenAI function API (non-strict) would reject in ``schema``; empty when fine."""
    problems: list[str] = []
    if not isinstance(schema, dict):
        return ["/: parameters must be a JSON object"]
    if schema.get("type") != "object":
        problems.append(f"/: top-level type must be 'object', got {schema.get('type')!r}")
    if not isinstance(schema.get("properties"), dict):
        problems.append("/: top-level properties must be an object")
    try:
        json.dumps(schema, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (ValueError, TypeError, UnicodeEncodeError, RecursionError) as e:
        problems.append(f"/: not plain JSON ({type(e).__name__})")
        return problems
    _check(schema, "", 0, problems)
    return problems


def _check(s: Any, path: str, depth: int, problems: list[str]) -> None:
    where = path or "/"
    if not isinstance(s, dict):
        problems.append(f"{where}: schema must be an object")
        return
    if depth > MAX_DEPTH + 1:
        problems.append(f"{where}: nested deeper than {MAX_DEPTH + 1}")
        return
    extra = [k for k in s if k not in ALLOWED_KEYWORDS]
    if extra:
        problems.append(f"{where}: keywords not accepted: {extra!r}")
    types = None
    if "type" in s:
        t = s["type"]
        raw = [t] if isinstance(t, str) else t if isinstance(t, list) else None
        if not raw or not all(isinstance(x, str) and x in JSON_TYPES for x in raw) or len(set(raw)) != len(raw):
            problems.append(f"{where}: invalid type {t!r}")
        else:
            types = raw
    elif "anyOf" not in s:
        problems.append(f"{where}: needs a type or anyOf")
    if "anyOf" in s:
        branches = s["anyOf"]
        if not isinstance(branches, list) or not branches:
            problems.append(f"{where}: anyOf must be a non-empty list")
        else:
            for i, b in enumerate(branches):
                _check(b, f"{path}/anyOf/{i}", depth + 1, problems)
    if types and "array" in types and not isinstance(s.get("items"), dict):
        problems.append(f"{where}: array schema missing items")
    if "items" in s:
        _check(s["items"], f"{path}/items", depth + 1, problems)
    if "properties" in s:
        props = s["properties"]
        if not isinstance(props, dict):
            problems.append(f"{where}: properties must be an object")
        else:
            for k, v in props.items():
                _check(v, f"{path}/properties/{k}", depth + 1, problems)
    if "required" in s:
        req = s["required"]
        props = s.get("properties")
        if not isinstance(props, dict):
            props = {}
        if not isinstance(req, list) or not all(isinstance(r, str) for r in req) or len(set(req)) != len(req):
            problems.append(f"{where}: required must be a list of distinct names")
        else:
            missing = [r for r in req if r not in props]
            if missing:
                problems.append(f"{where}: required names missing from properties: {missing!r}")
    if "additionalProperties" in s and not isinstance(s["additionalProperties"], bool):
        _check(s["additionalProperties"], f"{path}/additionalProperties", depth + 1, problems)
    if "enum" in s:
        e = s["enum"]
        if not isinstance(e, list) or not e or not all(is_scalar(v) for v in e):
            problems.append(f"{where}: enum must be a non-empty list of JSON scalars")
    for k in ("description", "title", "pattern", "format"):
        if k in s and not isinstance(s[k], str):
            problems.append(f"{where}: {k} must be a string")
    for k in NUMBER_KEYS:
        if k in s and not is_num(s[k]):
            problems.append(f"{where}: {k} must be a finite number")
    for k in ("minLength", "maxLength", "minItems", "maxItems"):
        if k in s and not (isinstance(s[k], int) and not isinstance(s[k], bool) and s[k] >= 0):
            problems.append(f"{where}: {k} must be a non-negative integer")

