"""The one table of what the sanitiser keeps, keyword by keyword, and the value tests it uses.

The full walk keeps a keyword's value where its rule's ``ok`` holds (else makes of it what
``coerce`` gives, or drops it with a warning); the fast paths (``fast.py``) copy a value as it
is only where the same ``ok`` holds. A rule changed here changes both, so they cannot disagree.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, Protocol

from nbagent.schema.subset import FORMATS, JSON_TYPES, MAX_ENUM, NUMBER_KEYS, is_num, is_scalar, ok_str

MAX_NODES = 5000
"""Budget of schema nodes per tool: ``$ref`` fan-out can otherwise blow up exponentially."""

DROP: Any = object()
"""What a rule's ``coerce`` gives for a value the output cannot carry (dropped with a warning)."""

LEAF_TYPES = ["string", "number", "boolean", "object", "null"]
ANY_TYPES = ["string", "number", "boolean", "object", "array", "null"]
TEXT_KEYS = ("description", "title")
ANNOTATION_KEYS = ("description", "title", "default")


def permissive() -> dict[str, Any]:
    """A schema that accepts (almost) any JSON value yet names a type, as the API wants."""
    return {"type": list(ANY_TYPES), "items": {"type": list(LEAF_TYPES)}}


def is_count(v: Any) -> bool:
    return is_num(v) and v >= 0 and v == int(v)


def fix_str(v: str) -> str:
    return v if ok_str(v) else v.encode("utf-8", "replace").decode("utf-8")


def compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except (TypeError, re.error, RecursionError, OverflowError):
        return False
    return True


def json_safe(v: Any, depth: int = 0) -> bool:
    """Whether ``v`` is finite, acyclic-enough JSON (used for ``default`` values)."""
    if depth > 20:
        return False
    if is_scalar(v):
        return True
    if isinstance(v, list):
        return all(json_safe(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return all(ok_str(k) and json_safe(x, depth + 1) for k, x in v.items())
    return False


JUST_STR = {str}
"""``set(map(type, values)) <= JUST_STR``: every value a plain ``str``, tested in C."""


# -- value tests: the value is kept as it is -----------------------------------------------


def ok_text(v: Any) -> bool:
    """``ok_str``, answered without a call for the usual plain ASCII string."""
    return (v.__class__ is str and v.isascii()) or ok_str(v)


def ok_count(v: Any) -> bool:
    return v.__class__ is int and v >= 0


def ok_pattern(v: Any) -> bool:
    return ok_str(v) and compiles(v)


def ok_format(v: Any) -> bool:
    return isinstance(v, str) and v in FORMATS


def ok_number(v: Any) -> bool:
    return v.__class__ is int or is_num(v)  # an exact ``int`` is a number without the call


def ok_step(v: Any) -> bool:
    return ok_number(v) and v > 0


# -- coercions: what the walk makes of a value that is not kept as it is, or DROP ------------


def text_repaired(v: Any) -> Any:
    return fix_str(v) if isinstance(v, str) else DROP


def count_as_int(v: Any) -> Any:
    return int(v) if is_count(v) else DROP


def clean_enum(v: Any) -> bool:
    """An enum the walk keeps as it is on a string: distinct ASCII strings, not too many. (The
    walk reads an enum against the types it allows, so it has no one-value ``ok``.)"""
    return (
        v.__class__ is list
        and 0 < len(v) <= MAX_ENUM
        and set(map(type, v)) <= JUST_STR  # plain ``str`` all of ASCII: C-level passes, no loop
        and "".join(v).isascii()
        and len(set(v)) == len(v)
    )


# -- the table --------------------------------------------------------------------------------

Family = Literal["object", "array", "string", "number"]
_SCALARS = frozenset({"string", "integer", "number", "boolean", "null"})
_NUMBERS = frozenset({"integer", "number"})


class Rule(NamedTuple):
    family: Family | None
    """Type the keyword belongs to (on a schema of another type it means nothing); ``None``: any."""
    use: Literal["keep", "rewrite", "drop"]
    """``keep``: the output carries it once its value is read; ``rewrite``: read into another
    keyword; ``drop``: not read (dropped with a warning unless in ``SILENT_DROP``)."""
    ok: Callable[[Any], bool] | None = None
    """The value is kept as it is: by the walk and, so, by the fast paths' copies; ``None`` when
    its family's code reads it (child schemas, ``required``, ``enum``)."""
    coerce: Callable[[Any], Any] | None = None
    """What the walk makes of a value that is not ``ok`` (a repaired one, or ``DROP``); by
    default ``DROP``. The fast paths never copy such a value."""
    clean: Callable[[Any], bool] | None = None
    """A narrower test than ``ok`` for the fast paths, where a copy would differ from the walk's
    output in more than the value (key order)."""
    leaf: frozenset[str] = frozenset()
    """Scalar types on which a leaf holding it may be copied as it is."""
    bound: Literal["min", "max"] | None = None
    """A lower or upper bound: two of them merge (``allOf``) to the tighter one."""


_NUMBER_RULES = {
    "minimum": Rule("number", "keep", ok_number, leaf=_NUMBERS, bound="min"),
    "maximum": Rule("number", "keep", ok_number, leaf=_NUMBERS, bound="max"),
    "exclusiveMinimum": Rule("number", "keep", ok_number, leaf=_NUMBERS, bound="min"),
    "exclusiveMaximum": Rule("number", "keep", ok_number, leaf=_NUMBERS, bound="max"),
    "multipleOf": Rule("number", "keep", ok_step, leaf=_NUMBERS),
}
assert tuple(_NUMBER_RULES) == NUMBER_KEYS

RULES: dict[str, Rule] = {
    "description": Rule(None, "keep", ok_text, text_repaired, leaf=_SCALARS),
    "title": Rule(None, "keep", ok_text, text_repaired, leaf=_SCALARS),
    "default": Rule(None, "keep", json_safe, clean=is_scalar, leaf=_SCALARS),  # a list or object: the walk's order
    "enum": Rule(None, "keep", clean=clean_enum, leaf=frozenset({"string"})),
    "properties": Rule("object", "keep"),
    "required": Rule("object", "keep"),
    "additionalProperties": Rule("object", "keep"),
    "patternProperties": Rule("object", "drop"),
    "minProperties": Rule("object", "drop"),
    "maxProperties": Rule("object", "drop"),
    "items": Rule("array", "keep"),
    "prefixItems": Rule("array", "rewrite"),
    "minItems": Rule("array", "keep", ok_count, count_as_int, bound="min"),
    "maxItems": Rule("array", "keep", ok_count, count_as_int, bound="max"),
    "contains": Rule("array", "drop"),
    "uniqueItems": Rule("array", "drop"),
    "minLength": Rule("string", "keep", ok_count, count_as_int, leaf=frozenset({"string"}), bound="min"),
    "maxLength": Rule("string", "keep", ok_count, count_as_int, leaf=frozenset({"string"}), bound="max"),
    "pattern": Rule("string", "keep", ok_pattern, leaf=frozenset({"string"})),
    "format": Rule("string", "keep", ok_format, leaf=frozenset({"string"})),
    **_NUMBER_RULES,
}

SILENT_DROP = frozenset(
    {
        "$schema", "$id", "$comment", "$defs", "definitions", "$anchor", "$dynamicAnchor", "$vocabulary",
        "examples", "example", "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
        "discriminator", "xml", "externalDocs", "markdownDescription", "uniqueItems",
        "minProperties", "maxProperties", "propertyNames", "$dynamicRef", "$recursiveAnchor",
    }
)  # fmt: skip
"""Dropped without a warning: annotations, or constraints too minor to tell anyone about."""
GENERIC_KEYS = frozenset(
    {"type", "description", "title", "default", "enum", "const", "nullable", "anyOf", "oneOf", "allOf", "$ref"}
)
"""Keywords the walk reads on a schema of any type."""

# -- derived from the table -------------------------------------------------------------------

KEY_OWNER: dict[str, Family] = {k: r.family for k, r in RULES.items() if r.family is not None}
"""Type each type-specific keyword belongs to: on a schema of another type it means nothing."""


def read(k: str, v: Any) -> Any:
    """``v`` as the walk keeps it under keyword ``k``'s rule, or ``DROP``."""
    rule = RULES[k]
    if rule.ok is not None and rule.ok(v):
        return v
    return rule.coerce(v) if rule.coerce is not None else DROP


FAMILY_KEYS: dict[Family, tuple[str, ...]] = {
    f: tuple(k for k, o in KEY_OWNER.items() if o == f) for f in ("object", "array", "string", "number")
}
"""Every keyword of each type: any of them names the type when none is declared."""
READ_KEYS: dict[Family, frozenset[str]] = {
    f: frozenset(k for k in keys if RULES[k].use != "drop") for f, keys in FAMILY_KEYS.items()
}
"""The keywords of each type the walk reads (the rest are dropped)."""
BOUNDS = {k: r.bound for k, r in RULES.items() if r.bound is not None}
CLEAN: dict[str, Callable[[Any], bool]] = {k: t for k, r in RULES.items() if (t := r.clean or r.ok) is not None}
"""Per keyword: the value may be copied as it is."""
LEAF_KEYS: dict[str, frozenset[str]] = {
    t: frozenset({"type", *(k for k, r in RULES.items() if t in r.leaf)}) for t in _SCALARS
}
"""Keywords a scalar leaf may have and still be copied as it is (their values checked by ``CLEAN``)."""


def _container_keys(family: Family) -> frozenset[str]:
    return frozenset({"type", *TEXT_KEYS, *(k for k in FAMILY_KEYS[family] if RULES[k].use == "keep")})


OBJECT_KEYS = _container_keys("object")
"""Keywords an object in the accepted form may have (its children walked as usual)."""
ARRAY_KEYS = _container_keys("array")
"""Keywords an array in the accepted form may have."""


# -- types ------------------------------------------------------------------------------------


def scalar_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "number"
    return "string"


def fits(v: Any, types: list[str]) -> bool:
    t = scalar_type(v)
    return t in types or (t == "integer" and "number" in types)


def norm_types(t: Any) -> list[str] | None:
    """Valid declared types, ``integer`` folded into ``number`` when both appear."""
    raw = [t] if isinstance(t, str) else t if isinstance(t, list) else None
    if raw is None:
        return None
    out: list[str] = []
    for x in raw:
        if isinstance(x, str) and x in JSON_TYPES and x not in out:
            out.append(x)
    if "integer" in out and "number" in out:
        out.remove("integer")
    return out or None


def infer_types(s: dict[str, Any]) -> list[str] | None:
    enum = s.get("enum")
    if isinstance(enum, list) and enum:
        found: list[str] = []
        for v in enum:
            if is_scalar(v):
                t = scalar_type(v)
                if t not in found:
                    found.append(t)
        return norm_types(found)
    found = [f for f, keys in FAMILY_KEYS.items() if any(k in s for k in keys)]
    return found or None


class Walker(Protocol):
    """What the combinator and keyword rules need of the walk (``walk.Sanitizer``)."""

    root: Any

    def warn(self, path: str, msg: str) -> None: ...

    def child(self, s: Any, depth: int, refs: tuple[str, ...], *path: str) -> dict[str, Any]: ...
