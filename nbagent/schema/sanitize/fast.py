"""The sanitiser's short ways: schemas, or parts of them, already in the accepted form are
copied rather than walked. What counts as accepted comes from the rules table (``rules.py``),
so a copy is what the full walk would give (``tests/schema/test_sanitize_fast_path.py``)."""

from __future__ import annotations

from typing import Any

from nbagent.schema.sanitize.rules import ARRAY_KEYS, CLEAN, JUST_STR, LEAF_KEYS, OBJECT_KEYS, TEXT_KEYS

_ok_text = CLEAN["description"]
_ok_count = CLEAN["minItems"]
_LEAF_TESTS = {t: (keys, {k: CLEAN.get(k, bool) for k in keys}) for t, keys in LEAF_KEYS.items()}
"""Per scalar type: its leaf keywords, and each one's ``CLEAN`` test (``type`` is checked apart)."""


def clean_text(s: dict[str, Any]) -> bool:
    """``description`` and ``title``, where present, are text the API takes as it is."""
    for k in TEXT_KEYS:
        if k in s and not _ok_text(s[k]):
            return False
    return True


def clean_leaf(s: dict[str, Any]) -> bool:
    """Whether ``s`` is a scalar leaf the full rules would return unchanged: its type's own
    keywords only, each with a value they keep as it is (so no warning is lost)."""
    t = s.get("type")
    found = _LEAF_TESTS.get(t) if t.__class__ is str else None
    if found is None or not s.keys() <= found[0]:
        return False
    tests = found[1]
    for k, v in s.items():
        if k != "type" and not tests[k](v):
            return False
    return True


def copy_leaf(s: dict[str, Any]) -> dict[str, Any]:
    out = dict(s)
    if "enum" in out:
        out["enum"] = list(out["enum"])
    return out


def object_shape(s: dict[str, Any]) -> tuple[dict[str, Any], list[str] | None, Any] | None:
    """``properties`` (``{}`` when absent), ``required`` and ``additionalProperties`` of an object
    schema (``type`` is ``"object"``) in the accepted form; ``None`` when any needs the full rules."""
    if s["type"].__class__ is not str or not s.keys() <= OBJECT_KEYS:
        return None
    for k in TEXT_KEYS:  # ``clean_text``, inline: this runs for every object of every schema
        if k in s and not _ok_text(s[k]):
            return None
    props = s.get("properties")
    req = s.get("required")
    ap = s.get("additionalProperties", True)
    if props is None:
        props = {}
    elif props.__class__ is not dict or not set(map(type, props)) <= JUST_STR or not "".join(props).isascii():
        return None  # names all plain ASCII ``str``: C-level passes, not a Python loop per name
    if req is not None:
        if req.__class__ is not list or not req or not set(map(type, req)) <= JUST_STR:
            return None
        names = set(req)
        if len(names) != len(req) or not props.keys() >= names:
            return None
    if ap.__class__ is not bool and ap.__class__ is not dict:
        return None
    return props, req, ap


def array_shape(s: dict[str, Any]) -> Any:
    """``items`` (``True`` when absent) of an array schema (``type`` is ``"array"``) in the accepted
    form; ``None`` when anything in it needs the full rules."""
    if s["type"].__class__ is not str or not s.keys() <= ARRAY_KEYS or not clean_text(s):
        return None
    items = s.get("items", True)
    if items is not True and items.__class__ is not dict:
        return None
    for k in ("minItems", "maxItems"):
        if k in s and not _ok_count(s[k]):
            return None
    return items


def text_first(s: dict[str, Any]) -> dict[str, Any]:
    """The head of a clean object's output: its text where the server put it, then its type."""
    out = {k: v for k, v in s.items() if k in TEXT_KEYS}
    out["type"] = "object"
    return out


_FLAT_LEAF = frozenset({"type", *TEXT_KEYS})
_FLAT_TYPES = ("string", "integer", "number", "boolean")  # a tuple: a type may be an unhashable list


def flat_root(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The everyday root, copied in the server's key order (``$schema`` left out): an object in
    the accepted form (``object_shape``) whose properties are scalar leaves of a type and ASCII
    text, and no ``additionalProperties`` schema. ``None`` for any other root, which the walk
    then takes (giving it the walk's key order)."""
    props = schema.get("properties", {})
    if schema.get("type") != "object" or props.__class__ is not dict:
        return None
    for p in props.values():  # first: a nested root fails here, at its first child
        if not isinstance(p, dict) or p.get("type") not in _FLAT_TYPES or not p.keys() <= _FLAT_LEAF:
            return None
        for k in TEXT_KEYS:  # ASCII text (``CLEAN`` keeps it); inline: this loop is the everyday tool's cost
            if k in p and not (isinstance(p[k], str) and p[k].isascii()):
                return None
    out = dict(schema)
    out.pop("$schema", None)
    shape = object_shape(out)
    if shape is None or shape[2].__class__ is dict:
        return None
    for k in TEXT_KEYS:  # ``object_shape`` found any text a ``str``
        if k in out and not out[k].isascii():
            return None
    out["properties"] = {k: dict(v) for k, v in props.items()}
    return out
