"""The keyword families of one schema node, read through the rules table (``rules.py``):
annotations, types and ``enum``, and the keywords of objects, arrays, strings and numbers."""

from __future__ import annotations

from typing import Any

from nbagent.schema.sanitize.rules import (
    ANY_TYPES,
    DROP,
    FAMILY_KEYS,
    GENERIC_KEYS,
    KEY_OWNER,
    MAX_NODES,
    READ_KEYS,
    SILENT_DROP,
    TEXT_KEYS,
    Walker,
    fits,
    infer_types,
    norm_types,
    permissive,
    read,
    scalar_type,
)
from nbagent.schema.subset import MAX_ENUM, NUMBER_KEYS, is_num, is_scalar, ok_str

_DRAFT4_BASES = ("minimum", "maximum")
_COUNTS = ("minLength", "maxLength")
"""String keywords read even when ``null`` (and then dropped with a warning)."""


def keep(san: Walker, k: str, v: Any, out: dict[str, Any], path: str) -> None:
    """``v`` as its rule reads it into ``out[k]``, or a warning that it was dropped."""
    kept = read(k, v)
    if kept is not DROP:
        out[k] = kept
    elif k == "format":
        san.warn(path, f"format {v!r} dropped (not one the API knows)")
    else:
        san.warn(path, f"invalid {k} dropped")


def _owner_applies(owner: str, types: list[str]) -> bool:
    return owner in types or (owner == "number" and "integer" in types)


def annotation_keywords(san: Walker, s: dict[str, Any], path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in TEXT_KEYS:
        v = s.get(k)
        if v is not None:
            text = read(k, v)
            if text is DROP:
                san.warn(path, f"non-string {k} dropped")
            else:
                out[k] = text
    return out


def allowed_types(san: Walker, s: dict[str, Any], path: str) -> tuple[dict[str, Any], list[str]]:
    """The types ``s`` allows: declared, else inferred from its keywords; ``const`` becomes an enum."""
    if "const" in s:
        c = s["const"]
        if isinstance(s.get("enum"), list) and not any(c == v and type(c) is type(v) for v in s["enum"]):
            san.warn(path, "const not among enum values; kept const")
        s = {**s, "enum": [c]}
    types = norm_types(s.get("type"))
    if "type" in s and types is None:
        san.warn(path, f"invalid type {s['type']!r} ignored")
    if types is None:
        types = infer_types(s) or list(ANY_TYPES)
    if s.get("nullable") is True and "null" not in types:
        types = types + ["null"]
    return s, types


def enum_keyword(san: Walker, s: dict[str, Any], types: list[str], out: dict[str, Any], path: str) -> list[str]:
    """Scalars of the declared type into ``out``; if none fit, the enum wins over the type."""
    enum = s["enum"]
    vals: list[Any] = []
    if isinstance(enum, list):
        seen: set[tuple[str, Any]] = set()
        for v in enum:
            if not is_scalar(v):
                continue
            key = (scalar_type(v) if not isinstance(v, float) else "number", v)
            if key not in seen:
                seen.add(key)
                vals.append(v)
    if len(vals) != (len(enum) if isinstance(enum, list) else -1):
        san.warn(path, "enum values that are not distinct JSON scalars dropped")
    fitting = [v for v in vals if fits(v, types)]
    if vals and not fitting:
        san.warn(path, "enum values do not match the declared type; type taken from the values")
        types = infer_types({"enum": vals}) or types
        fitting = vals
    elif len(fitting) != len(vals):
        san.warn(path, "enum values of the wrong type dropped")
    if fitting:
        if len(fitting) > MAX_ENUM:
            san.warn(path, f"enum cut to {MAX_ENUM} values")
            fitting = fitting[:MAX_ENUM]
        out["enum"] = fitting
    else:
        san.warn(path, "empty enum dropped")
    return types


def typed_keywords(
    san: Walker,
    s: dict[str, Any],
    types: list[str],
    out: dict[str, Any],
    path: str,
    depth: int,
    refs: tuple[str, ...],
) -> set[str]:
    """The keywords of each allowed type into ``out``; returns every keyword that was read."""
    used = set(GENERIC_KEYS)
    if "object" in types:
        used.update(READ_KEYS["object"])
        object_keywords(san, s, out, path, depth, refs)
    if "array" in types:
        used.update(READ_KEYS["array"])
        array_keywords(san, s, out, path, depth, refs)
    if "string" in types:
        used.update(READ_KEYS["string"])
        string_keywords(san, s, out, path)
    if "number" in types or "integer" in types:
        used.update(READ_KEYS["number"])
        number_keywords(san, s, out, path)
    return used


def warn_unsupported(san: Walker, s: dict[str, Any], used: set[str], types: list[str], path: str) -> None:
    """One warning naming what was dropped, silent for annotations, ``x-`` extensions and
    keywords of a type the schema does not allow (they mean nothing there)."""
    dropped = sorted(
        str(k)
        for k in s
        if k not in used
        and k not in SILENT_DROP
        and not (isinstance(k, str) and k.startswith("x-"))
        and not (k in KEY_OWNER and not _owner_applies(KEY_OWNER[k], types))
    )
    if dropped:
        san.warn(path, f"unsupported keyword(s) dropped: {', '.join(dropped)}")


def object_keywords(
    san: Walker, s: dict[str, Any], out: dict[str, Any], path: str, depth: int, refs: tuple[str, ...]
) -> None:
    props_in = s.get("properties")
    props: dict[str, Any] = {}
    if props_in is not None and not isinstance(props_in, dict):
        san.warn(path, "properties is not an object; dropped")
    elif isinstance(props_in, dict):
        for k, v in props_in.items():
            name = k if isinstance(k, str) else str(k)
            if not ok_str(name) or name in props:
                san.warn(path, f"property name {name!r} unusable; dropped")
                continue
            props[name] = san.child(v, depth + 1, refs, path, "properties", name)
    req = s.get("required")
    required: list[str] = []
    if isinstance(req, list):
        for r in req:
            if not isinstance(r, str) or r in required:
                continue
            if r not in props:
                if not ok_str(r) or "patternProperties" in s or len(props) > MAX_NODES:
                    continue
                san.warn(path, f"required {r!r} has no schema; exposed as accepting any value")
                props[r] = permissive()
            required.append(r)
    elif req is not None and req is not True:
        san.warn(path, "required is not a list; dropped")
    if props or depth == 0 or props_in is not None:
        out["properties"] = props
    if required:
        out["required"] = required
    ap = s.get("additionalProperties")
    if isinstance(ap, bool):
        out["additionalProperties"] = ap
    elif isinstance(ap, dict):
        out["additionalProperties"] = san.child(ap, depth + 1, refs, path, "additionalProperties")
    elif ap is not None:
        san.warn(path, "invalid additionalProperties dropped")


def array_keywords(
    san: Walker, s: dict[str, Any], out: dict[str, Any], path: str, depth: int, refs: tuple[str, ...]
) -> None:
    items = s.get("items")
    if isinstance(items, list) or (items is None and isinstance(s.get("prefixItems"), list)):
        tup = items if isinstance(items, list) else s["prefixItems"]
        san.warn(path, "tuple items exposed as a list of any of the positions' schemas")
        items = {"anyOf": tup} if tup else True
    if items is False:
        out["maxItems"] = 0
        items = True
    out["items"] = san.child(items if items is not None else True, depth + 1, refs, path, "items")
    for k in ("minItems", "maxItems"):
        if k in s and k not in out:
            keep(san, k, s[k], out, path)


def string_keywords(san: Walker, s: dict[str, Any], out: dict[str, Any], path: str) -> None:
    for k in FAMILY_KEYS["string"]:
        if k in s and (s[k] is not None or k in _COUNTS):
            keep(san, k, s[k], out, path)


def number_keywords(san: Walker, s: dict[str, Any], out: dict[str, Any], path: str) -> None:
    for k in NUMBER_KEYS:
        v = s.get(k)
        if v is None:
            continue
        if k in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(v, bool):  # draft 4
            base = "minimum" if k == "exclusiveMinimum" else "maximum"
            if v and is_num(s.get(base)):
                out[k] = s[base]
                out.pop(base, None)
            continue
        if k in _DRAFT4_BASES and s.get("exclusive" + k.capitalize()) is True and is_num(v):
            continue  # already turned into the exclusive form
        keep(san, k, v, out, path)
