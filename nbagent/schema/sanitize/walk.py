"""MCP ``inputSchema`` -> a schema the OpenAI function API accepts (DESIGN §4).

Servers send any JSON Schema dialect, broken ones included; models accept a subset. The
sanitiser keeps what constrains the arguments in a form the API takes (a whitelist of
keywords), rewrites what it can (local ``$ref``, ``const``, single-branch combinators,
``allOf``, ``oneOf``, ``nullable``, tuple ``items``, draft-4 ``exclusiveMinimum``) and
degrades the rest to a permissive schema with a warning. It never raises: a tool with a
hostile schema is still callable, it just tells the model less.

Its output is held to ``openai_schema_problems`` (``check.py``).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import unquote

from nbagent.schema.subset import FORMATS, JSON_TYPES, MAX_DEPTH, MAX_ENUM, NUMBER_KEYS, is_num, is_scalar, ok_str

MAX_NODES = 5000
"""Budget of schema nodes per tool: ``$ref`` fan-out can otherwise blow up exponentially."""
MAX_WARNINGS = 40

_ANNOTATION_KEYS = ("description", "title", "default")
_SILENT_DROP = frozenset(
    {
        "$schema", "$id", "$comment", "$defs", "definitions", "$anchor", "$dynamicAnchor", "$vocabulary",
        "examples", "example", "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
        "discriminator", "xml", "externalDocs", "markdownDescription", "uniqueItems",
        "minProperties", "maxProperties", "propertyNames", "$dynamicRef", "$recursiveAnchor",
    }
)  # fmt: skip
"""Dropped without a warning: annotations, or constraints too minor to tell anyone about."""
_OBJECT_KEYS = ("properties", "required", "additionalProperties", "patternProperties", "minProperties", "maxProperties")
_ARRAY_KEYS = ("items", "prefixItems", "minItems", "maxItems", "contains", "uniqueItems")
_STRING_KEYS = ("minLength", "maxLength", "pattern", "format")
_MIN_KEYS = ("minimum", "exclusiveMinimum", "minLength", "minItems")
_MAX_KEYS = ("maximum", "exclusiveMaximum", "maxLength", "maxItems")

_KEY_OWNER = {
    **{k: "object" for k in _OBJECT_KEYS},
    **{k: "array" for k in _ARRAY_KEYS},
    **{k: "string" for k in _STRING_KEYS},
    **{k: "number" for k in NUMBER_KEYS},
}
"""Type each type-specific keyword belongs to: on a schema of another type it means nothing."""


def _owner_applies(owner: str, types: list[str]) -> bool:
    return owner in types or (owner == "number" and "integer" in types)


_GENERIC_KEYS = frozenset(
    {"type", "description", "title", "default", "enum", "const", "nullable", "anyOf", "oneOf", "allOf", "$ref"}
)

_LEAF_TYPES = ["string", "number", "boolean", "object", "null"]
_ANY_TYPES = ["string", "number", "boolean", "object", "array", "null"]


def permissive() -> dict[str, Any]:
    """A schema that accepts (almost) any JSON value yet names a type, as the API wants."""
    return {"type": list(_ANY_TYPES), "items": {"type": list(_LEAF_TYPES)}}



def _is_count(v: Any) -> bool:
    return is_num(v) and v >= 0 and v == int(v)


def _fix_str(v: str) -> str:
    return v if ok_str(v) else v.encode("utf-8", "replace").decode("utf-8")


def _scalar_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "number"
    return "string"


def _fits(v: Any, types: list[str]) -> bool:
    t = _scalar_type(v)
    return t in types or (t == "integer" and "number" in types)


def _json_safe(v: Any, depth: int = 0) -> bool:
    """Whether ``v`` is finite, acyclic-enough JSON (used for ``default`` values)."""
    if depth > 20:
        return False
    if is_scalar(v):
        return True
    if isinstance(v, list):
        return all(_json_safe(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return all(ok_str(k) and _json_safe(x, depth + 1) for k, x in v.items())
    return False


def _norm_types(t: Any) -> list[str] | None:
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


def _infer_types(s: dict[str, Any]) -> list[str] | None:
    enum = s.get("enum")
    if isinstance(enum, list) and enum:
        found: list[str] = []
        for v in enum:
            if is_scalar(v):
                t = _scalar_type(v)
                if t not in found:
                    found.append(t)
        return _norm_types(found)
    found = []
    for keys, t in (
        (_OBJECT_KEYS, "object"),
        (_ARRAY_KEYS, "array"),
        (_STRING_KEYS, "string"),
        (NUMBER_KEYS, "number"),
    ):
        if any(k in s for k in keys):
            found.append(t)
    return found or None


_CLEAN_OBJECT_KEYS = frozenset({"type", "description", "title", "properties", "required", "additionalProperties"})
_CLEAN_ARRAY_KEYS = frozenset({"type", "description", "title", "items", "minItems", "maxItems"})
_TEXT_KEYS = frozenset({"description", "title"})
_CLEAN_LEAF_KEYS = {
    "string": frozenset({"type", "description", "title", "default", "enum", "minLength", "maxLength", "pattern",
                         "format"}),
    "integer": frozenset({"type", "description", "title", "default", *NUMBER_KEYS}),
    "number": frozenset({"type", "description", "title", "default", *NUMBER_KEYS}),
    "boolean": frozenset({"type", "description", "title", "default"}),
    "null": frozenset({"type", "description", "title", "default"}),
}  # fmt: skip
"""Keywords a scalar leaf may have and still be copied as it is (their values are checked)."""


def _is_plain_count(v: Any) -> bool:
    return v.__class__ is int and v >= 0


def _clean_text(s: dict[str, Any]) -> bool:
    """``description`` and ``title``, where present, are text the API takes as it is."""
    for k in _TEXT_KEYS:
        if k in s and not _ok_text(s[k]):
            return False
    return True


def _ok_text(v: Any) -> bool:
    """``ok_str``, answered without a call for the usual plain ASCII string."""
    return (v.__class__ is str and v.isascii()) or ok_str(v)


_JUST_STR = {str}


def _all_ascii_str(values: Any) -> bool:
    """Every item is a plain ``str`` of ASCII: C-level passes, not a Python loop per item."""
    return set(map(type, values)) <= _JUST_STR and "".join(values).isascii()


def _clean_leaf(s: dict[str, Any]) -> bool:
    """Whether ``s`` is a scalar leaf the full rules would return unchanged: its type's own
    keywords only, each with a value they keep as it is (so no warning is lost)."""
    t = s.get("type")
    allowed = _CLEAN_LEAF_KEYS.get(t) if t.__class__ is str else None
    if allowed is None or not s.keys() <= allowed:
        return False
    for k, v in s.items():
        if k == "description" or k == "title":
            if not _ok_text(v):
                return False
        elif k == "type":
            continue
        elif k == "default":
            if not is_scalar(v):
                return False
        elif k == "enum":
            if (
                v.__class__ is not list
                or not 0 < len(v) <= MAX_ENUM
                or not _all_ascii_str(v)
                or len(set(v)) != len(v)
            ):
                return False
        elif k == "minLength" or k == "maxLength":
            if not _is_plain_count(v):
                return False
        elif k == "format":
            if v.__class__ is not str or v not in FORMATS:
                return False
        elif k == "pattern":
            if v.__class__ is not str or not v.isascii() or not _compiles(v):
                return False
        elif (v.__class__ is not int and not is_num(v)) or (k == "multipleOf" and v <= 0):
            return False  # an exact ``int`` is a number without the call; a ``bool`` is not
    return True


def _copy_leaf(s: dict[str, Any]) -> dict[str, Any]:
    out = dict(s)
    if "enum" in out:
        out["enum"] = list(out["enum"])
    return out


def _text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, sort_keys=True)


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except (TypeError, re.error, RecursionError, OverflowError):
        return False
    return True


def _object_shape(s: dict[str, Any]) -> tuple[dict[str, Any], list[str] | None, Any] | None:
    """``properties`` (``{}`` when absent), ``required`` and ``additionalProperties`` of an object
    schema (``type`` is ``"object"``) in the accepted form; ``None`` when any needs the full rules."""
    if s["type"].__class__ is not str or not s.keys() <= _CLEAN_OBJECT_KEYS or not _clean_text(s):
        return None
    props = s.get("properties")
    req = s.get("required")
    ap = s.get("additionalProperties", True)
    if props is None:
        props = {}
    elif props.__class__ is not dict or not _all_ascii_str(props):
        return None
    if req is not None and (
        req.__class__ is not list
        or not req
        or not set(map(type, req)) <= _JUST_STR
        or not props.keys() >= set(req)
        or len(set(req)) != len(req)
    ):
        return None
    if ap.__class__ is not bool and ap.__class__ is not dict:
        return None
    return props, req, ap


def _array_shape(s: dict[str, Any]) -> Any:
    """``items`` (``True`` when absent) of an array schema (``type`` is ``"array"``) in the accepted
    form; ``None`` when anything in it needs the full rules."""
    if s["type"].__class__ is not str or not s.keys() <= _CLEAN_ARRAY_KEYS or not _clean_text(s):
        return None
    items = s.get("items", True)
    if items is not True and items.__class__ is not dict:
        return None
    for k in ("minItems", "maxItems"):
        if k in s and not _is_plain_count(s[k]):
            return None
    return items


def _text_first(s: dict[str, Any]) -> dict[str, Any]:
    """The head of a clean object's output: its text where the server put it, then its type."""
    out = {k: v for k, v in s.items() if k in _TEXT_KEYS}
    out["type"] = "object"
    return out


class _NotPlain(Exception):
    """A node below ``_Sanitizer.plain`` needs the full rules."""


class _Sanitizer:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.warnings: list[str] = []
        self._seen_warnings: set[str] = set()
        self.nodes = 0
        self.active: set[int] = set()
        self.not_plain: set[int] = set()
        """Ids of nodes whose subtree ``plain`` found a node in it not in the accepted form: the
        walk below them does not try ``plain`` on them again, so a node deep down that needs the
        full rules costs one failed try, not one per ancestor. (An id reused by a new node only
        sends that node to the walk, which gives the same output.)"""

    def warn(self, path: str, msg: str) -> None:
        text = f"{path or '/'}: {msg}"
        if text in self._seen_warnings:
            return
        self._seen_warnings.add(text)
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(text)
        elif len(self.warnings) == MAX_WARNINGS:
            self.warnings.append("further warnings omitted")

    # -- $ref ------------------------------------------------------------------------------

    def resolve(self, ref: str) -> Any:
        """The target of a local JSON pointer ``#/...``; ``None`` when absent or not local."""
        if ref in ("#", ""):
            return self.root
        if not ref.startswith("#/"):
            return None
        node = self.root
        for part in ref[2:].split("/"):
            part = unquote(part).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node

    def expand(self, s: dict[str, Any], path: str, refs: tuple[str, ...]) -> tuple[Any, tuple[str, ...]]:
        """Replace ``$ref`` at the top of ``s`` by its target (siblings merged in)."""
        for _ in range(64):
            if not isinstance(s, dict) or "$ref" not in s:
                return s, refs
            ref = s["$ref"]
            rest = {k: v for k, v in s.items() if k != "$ref"}
            if not isinstance(ref, str):
                self.warn(path, "dropped a non-string $ref")
                s = rest
                continue
            if ref in refs:
                self.warn(path, f"recursive $ref {ref!r} cut; the inner level accepts any value of its type")
                return self.leaf(self.resolve(ref), rest), refs
            target = self.resolve(ref)
            if target is None:
                self.warn(path, f"unresolvable $ref {ref!r} dropped (only local #/... references are followed)")
                s = rest
                continue
            refs = refs + (ref,)
            if target is True or (isinstance(target, dict) and not target):
                s = rest
            elif not isinstance(target, dict):
                return target, refs
            elif not rest or all(k in _ANNOTATION_KEYS for k in rest):
                s = {**target, **rest}
            else:
                s = {"allOf": [target, rest]}
        self.warn(path, "$ref chain too long; made permissive")
        return True, refs

    # -- leaves ----------------------------------------------------------------------------

    def leaf(self, s: Any, annotations: dict[str, Any] | None = None) -> dict[str, Any]:
        """A childless stand-in for ``s``: its (inferred) type and description, nothing more."""
        types = None
        if isinstance(s, dict) and "$ref" not in s:
            types = _norm_types(s.get("type")) or _infer_types(s)
        if not types:
            out = permissive()
        else:
            out = {"type": types[0] if len(types) == 1 else types}
            if "array" in types:
                out["items"] = {"type": list(_LEAF_TYPES)}
        src = {**(s if isinstance(s, dict) else {}), **(annotations or {})}
        for k in ("description", "title"):
            if ok_str(src.get(k)):
                out[k] = src[k]
        return out

    # -- merging (allOf) -------------------------------------------------------------------

    def merge(self, a: dict[str, Any], b: dict[str, Any], path: str) -> dict[str, Any]:
        """``allOf: [a, b]`` as one schema where the rule is simple; conflicts keep ``a``."""
        out = dict(a)
        for k, bv in b.items():
            if k not in out:
                out[k] = bv
                continue
            av = out[k]
            if av == bv and type(av) is type(bv):
                continue
            if k == "properties" and isinstance(av, dict) and isinstance(bv, dict):
                props = dict(av)
                for pk, pv in bv.items():
                    props[pk] = {"allOf": [props[pk], pv]} if pk in props and props[pk] != pv else pv
                out[k] = props
            elif k == "required" and isinstance(av, list) and isinstance(bv, list):
                out[k] = av + [x for x in bv if x not in av]
            elif k == "type":
                ta, tb = _norm_types(av), _norm_types(bv)
                if ta is None or tb is None:
                    out[k] = av if ta is not None else bv
                    continue
                both = [t for t in ta if t in tb or (t == "integer" and "number" in tb)]
                both += [t for t in tb if t == "integer" and "number" in ta and t not in both]
                if both:
                    out[k] = both
                else:
                    self.warn(path, f"allOf branches disagree on type ({av!r} vs {bv!r}); kept the first")
            elif k == "enum" and isinstance(av, list) and isinstance(bv, list):
                common = [x for x in av if any(x == y and type(x) is type(y) for y in bv)]
                if common:
                    out[k] = common
                else:
                    self.warn(path, "allOf branches share no enum value; kept the first")
            elif k in _MIN_KEYS and is_num(av) and is_num(bv):
                out[k] = max(av, bv)
            elif k in _MAX_KEYS and is_num(av) and is_num(bv):
                out[k] = min(av, bv)
            elif k in ("items", "additionalProperties"):
                if av is False or bv is False:
                    out[k] = False
                elif av is True or bv is True:
                    out[k] = bv if av is True else av
                else:
                    out[k] = {"allOf": [av, bv]}
            elif k == "allOf" and isinstance(av, list) and isinstance(bv, list):
                out[k] = av + bv
            elif k in ("anyOf", "oneOf") and isinstance(av, list) and isinstance(bv, list):
                if len(av) * len(bv) <= 16:
                    out[k] = [{"allOf": [x, y]} for x in av for y in bv]
                else:
                    self.warn(path, f"allOf of two large {k} lists; kept the first")
            elif k in _ANNOTATION_KEYS or k in _SILENT_DROP:
                continue
            else:
                self.warn(path, f"allOf branches disagree on {k!r}; kept the first")
        return out

    # -- the walk --------------------------------------------------------------------------

    def walk(self, s: Any, path: str, depth: int, refs: tuple[str, ...]) -> dict[str, Any]:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            self.warn("", f"schema larger than {MAX_NODES} nodes; the rest is permissive")
            return self.leaf(s)
        if s.__class__ is dict and depth < MAX_DEPTH and _clean_leaf(s):
            return _copy_leaf(s)  # the everyday leaf (it has no children, so it is no ancestor)
        if s is True or s is None:
            return permissive()
        if s is False:
            self.warn(path, "a 'false' schema (nothing allowed) cannot be expressed; made permissive")
            return permissive()
        if not isinstance(s, dict):
            self.warn(path, f"not a schema ({type(s).__name__}); made permissive")
            return permissive()
        if id(s) in self.active:
            self.warn(path, "self-containing schema object cut")
            return self.leaf(s)
        if depth >= MAX_DEPTH:
            self.warn(path, f"nested deeper than {MAX_DEPTH} levels; the rest accepts any value of its type")
            return self.leaf(s)
        self.active.add(id(s))
        try:
            return self.node(s, path, depth, refs)
        finally:
            self.active.discard(id(s))

    def child(self, s: Any, depth: int, refs: tuple[str, ...], *path: str) -> dict[str, Any]:
        """``walk`` of a child, its path (the parts joined) built only when the subtree is not all
        in the accepted form: the everyday child needs none, nor the walk's other checks."""
        if s.__class__ is dict and depth < MAX_DEPTH and id(s) not in self.not_plain:
            start = self.nodes
            try:
                return self.plain(s, depth)
            except _NotPlain:
                self.nodes = start
                self.not_plain.add(id(s))
        return self.walk(s, "/".join(path), depth, refs)

    def plain(self, s: dict[str, Any], depth: int) -> dict[str, Any]:
        """What ``walk`` gives a subtree every node of which is in the accepted form, counting its
        nodes as the walk does; ``_NotPlain`` (nodes uncounted by the caller) when any node is
        not. It needs no path (no warning is possible) and no ancestor set: a cycle runs into the
        depth limit, and the walk then tells it apart."""
        if self.nodes >= MAX_NODES:
            raise _NotPlain
        self.nodes += 1
        if _clean_leaf(s):
            return _copy_leaf(s)
        t = s.get("type")
        if t == "object":
            shape = _object_shape(s)
            if shape is None:
                raise _NotPlain
            return self.object_out(s, shape, _text_first(s), depth, (), "", plain=True)
        if t == "array":
            items = _array_shape(s)
            if items is None:
                raise _NotPlain
            out = dict(s)
            out["items"] = self.plain_below(items, depth + 1)
            return out
        raise _NotPlain

    def plain_below(self, s: Any, depth: int) -> dict[str, Any]:
        """``plain`` of a child: ``True`` counts a node and accepts anything, as in the walk."""
        if s is True:
            if self.nodes >= MAX_NODES:
                raise _NotPlain
            self.nodes += 1
            return permissive()
        if s.__class__ is not dict or depth >= MAX_DEPTH:
            raise _NotPlain
        try:
            return self.plain(s, depth)
        except _NotPlain:
            self.not_plain.add(id(s))
            raise

    def object_out(
        self, s: dict[str, Any], shape: tuple[dict[str, Any], list[str] | None, Any], out: dict[str, Any],
        depth: int, refs: tuple[str, ...], path: str, *, plain: bool,
    ) -> dict[str, Any]:
        """``out`` completed from a clean object's ``shape`` (``_object_shape``): properties (always
        at the root), required and additionalProperties; each child schema by ``plain_below`` when
        ``plain``, else by ``child``."""  # fmt: skip
        props, req, ap = shape
        below = depth + 1
        if "properties" in s or depth == 0:
            if plain:
                out["properties"] = {k: self.plain_below(v, below) for k, v in props.items()}
            else:
                out["properties"] = {k: self.child(v, below, refs, path, "properties", k) for k, v in props.items()}
        if req is not None:
            out["required"] = list(req)
        if ap.__class__ is dict:
            out["additionalProperties"] = (
                self.plain_below(ap, below) if plain else self.child(ap, below, refs, path, "additionalProperties")
            )
        elif "additionalProperties" in s:
            out["additionalProperties"] = ap
        return out

    def dialect_root(self, s: dict[str, Any]) -> dict[str, Any] | None:
        """A root that is an object in the accepted form but for keywords dropped silently (its
        dialect's ``$schema``, the ``$defs`` its children refer to), as the full rules give it
        (``type`` first, then its text, unlike ``clean_container``), its children walked as
        usual; ``None`` for any other root."""
        extra = s.keys() - _CLEAN_OBJECT_KEYS
        if not extra or not extra <= _SILENT_DROP or s.get("type") != "object":
            return None
        shape = _object_shape({k: v for k, v in s.items() if k not in extra})
        if shape is None:
            return None
        out: dict[str, Any] = {"type": "object"}
        for k in ("description", "title"):
            if k in s:
                out[k] = s[k]
        self.nodes += 1
        self.active.add(id(s))
        try:
            return self.object_out(s, shape, out, 0, (), "", plain=False)
        finally:
            self.active.discard(id(s))

    def clean_container(
        self, s: dict[str, Any], path: str, depth: int, refs: tuple[str, ...]
    ) -> dict[str, Any] | None:
        """An object or array already in the accepted form, its children walked as usual; ``None``
        when anything in it needs the full rules. Equal to what they would produce, just sooner."""
        t = s.get("type")
        if t == "object":
            shape = _object_shape(s)
            if shape is None:
                return None
            return self.object_out(s, shape, _text_first(s), depth, refs, path, plain=False)
        if t == "array":
            items = _array_shape(s)
            if items is None:
                return None
            out = dict(s)
            out["items"] = self.child(items, depth + 1, refs, path, "items")
            return out
        return None

    def normalise(self, s: dict[str, Any], path: str, refs: tuple[str, ...]) -> tuple[Any, tuple[str, ...]]:
        """Rewrite ``$ref``, ``allOf``, ``oneOf`` and single-branch ``anyOf`` away at this level."""
        for _ in range(32):
            s, refs = self.expand(s, path, refs)
            if not isinstance(s, dict):
                return s, refs
            if "allOf" in s:
                branches = s["allOf"]
                merged = {k: v for k, v in s.items() if k != "allOf"}
                if not isinstance(branches, list):
                    self.warn(path, "dropped a non-list allOf")
                    branches = []
                for b in branches:
                    b, refs = self.expand(b, path, refs)
                    if b is True or b is None:
                        continue
                    if not isinstance(b, dict):
                        self.warn(path, "dropped an allOf branch that is not a schema")
                        continue
                    merged = self.merge(merged, b, path)
                s = merged
                continue
            if "oneOf" in s:
                rest = {k: v for k, v in s.items() if k != "oneOf"}
                one = s["oneOf"]
                if isinstance(one, list) and len(one) > 1:
                    self.warn(path, "oneOf exposed as anyOf (exclusivity not enforced)")
                if not isinstance(one, list):
                    self.warn(path, "dropped a non-list oneOf")
                    s = rest
                else:
                    s = self.merge(rest, {"anyOf": one}, path) if "anyOf" in rest else {**rest, "anyOf": one}
                continue
            if "anyOf" in s:
                branches = s["anyOf"]
                rest = {k: v for k, v in s.items() if k != "anyOf"}
                if not isinstance(branches, list):
                    self.warn(path, "dropped a non-list anyOf")
                    s = rest
                    continue
                live = [b for b in branches if b is not False]
                if any(b is True or b is None or b == {} for b in live):
                    s = rest  # one branch accepts anything: the anyOf constrains nothing
                    continue
                if len(live) == 0:
                    self.warn(path, "anyOf without usable branches dropped")
                    s = rest
                    continue
                if len(live) == 1:
                    b, refs = self.expand(live[0], path, refs)
                    s = self.merge(rest, b, path) if isinstance(b, dict) else rest
                    continue
            return s, refs
        self.warn(path, "combinators nested too deeply; made permissive")
        return True, refs

    def node(self, s: dict[str, Any], path: str, depth: int, refs: tuple[str, ...]) -> dict[str, Any]:
        clean = self.clean_container(s, path, depth, refs)
        if clean is not None:
            return clean
        original = s
        s, refs = self.normalise(s, path, refs)
        if not isinstance(s, dict):
            return self.walk(s, path, depth, refs) if s is not True else permissive()
        if s is not original:  # a $ref or combinator rewritten away may leave a clean schema
            if _clean_leaf(s):
                return _copy_leaf(s)
            clean = self.clean_container(s, path, depth, refs)
            if clean is not None:
                return clean
        out = self.annotations(s, path)
        if "anyOf" in s:
            return self.any_of(s, out, path, depth, refs)
        s, types = self.types(s, path)
        if "enum" in s:
            types = self.enum_keyword(s, types, out, path)
        result: dict[str, Any] = {"type": types[0] if len(types) == 1 else types, **out}
        if "default" in s:
            if _json_safe(s["default"]):
                result["default"] = s["default"]
            else:
                self.warn(path, "default that is not plain JSON dropped")
        used = self.typed_keywords(s, types, result, path, depth, refs)
        if not s.keys() <= _GENERIC_KEYS:
            self.warn_unsupported(s, used, types, path)
        return result

    # -- keyword families ------------------------------------------------------------------

    def annotations(self, s: dict[str, Any], path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k in ("description", "title"):
            v = s.get(k)
            if v is not None:
                if isinstance(v, str):
                    out[k] = _fix_str(v)
                else:
                    self.warn(path, f"non-string {k} dropped")
        return out

    def any_of(
        self, s: dict[str, Any], out: dict[str, Any], path: str, depth: int, refs: tuple[str, ...]
    ) -> dict[str, Any]:
        """Several branches: the siblings are pushed into each, so each branch is complete."""
        rest = {k: v for k, v in s.items() if k not in ("anyOf", "description", "title", "default")}
        branches: list[dict[str, Any]] = []
        for i, b in enumerate(x for x in s["anyOf"] if x is not False):
            if rest and isinstance(b, dict):
                b, _ = self.expand(b, path, refs)
                b = self.merge(rest, b, path) if isinstance(b, dict) else rest
            sub = self.child(b, depth + 1, refs, path, "anyOf", str(i))
            flat = sub["anyOf"] if set(sub) <= {"anyOf", "description", "title"} and "anyOf" in sub else [sub]
            for f in flat:
                # A branch is dropped when its JSON text repeats one kept; equal text implies ==
                # (the output has no NaN), so the text is needed only to confirm an == match.
                if not any(f == b and _text(f) == _text(b) for b in branches):
                    branches.append(f)
        if len(branches) == 1:
            return {**branches[0], **{k: v for k, v in out.items() if k not in branches[0]}}
        out["anyOf"] = branches
        if "default" in s and _json_safe(s["default"]):
            out["default"] = s["default"]
        return out

    def types(self, s: dict[str, Any], path: str) -> tuple[dict[str, Any], list[str]]:
        """The types ``s`` allows: declared, else inferred from its keywords; ``const`` becomes an enum."""
        if "const" in s:
            c = s["const"]
            if isinstance(s.get("enum"), list) and not any(c == v and type(c) is type(v) for v in s["enum"]):
                self.warn(path, "const not among enum values; kept const")
            s = {**s, "enum": [c]}
        types = _norm_types(s.get("type"))
        if "type" in s and types is None:
            self.warn(path, f"invalid type {s['type']!r} ignored")
        if types is None:
            types = _infer_types(s) or list(_ANY_TYPES)
        if s.get("nullable") is True and "null" not in types:
            types = types + ["null"]
        return s, types

    def enum_keyword(self, s: dict[str, Any], types: list[str], out: dict[str, Any], path: str) -> list[str]:
        """Scalars of the declared type into ``out``; if none fit, the enum wins over the type."""
        enum = s["enum"]
        vals: list[Any] = []
        if isinstance(enum, list):
            seen: set[tuple[str, Any]] = set()
            for v in enum:
                if not is_scalar(v):
                    continue
                key = (_scalar_type(v) if not isinstance(v, float) else "number", v)
                if key not in seen:
                    seen.add(key)
                    vals.append(v)
        if len(vals) != (len(enum) if isinstance(enum, list) else -1):
            self.warn(path, "enum values that are not distinct JSON scalars dropped")
        fitting = [v for v in vals if _fits(v, types)]
        if vals and not fitting:
            self.warn(path, "enum values do not match the declared type; type taken from the values")
            types = _infer_types({"enum": vals}) or types
            fitting = vals
        elif len(fitting) != len(vals):
            self.warn(path, "enum values of the wrong type dropped")
        if fitting:
            if len(fitting) > MAX_ENUM:
                self.warn(path, f"enum cut to {MAX_ENUM} values")
                fitting = fitting[:MAX_ENUM]
            out["enum"] = fitting
        else:
            self.warn(path, "empty enum dropped")
        return types

    def typed_keywords(
        self, s: dict[str, Any], types: list[str], out: dict[str, Any], path: str, depth: int, refs: tuple[str, ...]
    ) -> set[str]:
        """The keywords of each allowed type into ``out``; returns every keyword that was read."""
        used = set(_GENERIC_KEYS)
        if "object" in types:
            used.update(("properties", "required", "additionalProperties"))
            self.object_keywords(s, out, path, depth, refs)
        if "array" in types:
            used.update(("items", "prefixItems", "minItems", "maxItems"))
            self.array_keywords(s, out, path, depth, refs)
        if "string" in types:
            used.update(_STRING_KEYS)
            self.string_keywords(s, out, path)
        if "number" in types or "integer" in types:
            used.update(NUMBER_KEYS)
            self.number_keywords(s, out, path)
        return used

    def warn_unsupported(self, s: dict[str, Any], used: set[str], types: list[str], path: str) -> None:
        """One warning naming what was dropped, silent for annotations, ``x-`` extensions and
        keywords of a type the schema does not allow (they mean nothing there)."""
        dropped = sorted(
            str(k)
            for k in s
            if k not in used
            and k not in _SILENT_DROP
            and not (isinstance(k, str) and k.startswith("x-"))
            and not (k in _KEY_OWNER and not _owner_applies(_KEY_OWNER[k], types))
        )
        if dropped:
            self.warn(path, f"unsupported keyword(s) dropped: {', '.join(dropped)}")

    def object_keywords(
        self, s: dict[str, Any], out: dict[str, Any], path: str, depth: int, refs: tuple[str, ...]
    ) -> None:
        props_in = s.get("properties")
        props: dict[str, Any] = {}
        if props_in is not None and not isinstance(props_in, dict):
            self.warn(path, "properties is not an object; dropped")
        elif isinstance(props_in, dict):
            for k, v in props_in.items():
                name = k if isinstance(k, str) else str(k)
                if not ok_str(name) or name in props:
                    self.warn(path, f"property name {name!r} unusable; dropped")
                    continue
                props[name] = self.child(v, depth + 1, refs, path, "properties", name)
        req = s.get("required")
        required: list[str] = []
        if isinstance(req, list):
            for r in req:
                if not isinstance(r, str) or r in required:
                    continue
                if r not in props:
                    if not ok_str(r) or "patternProperties" in s or len(props) > MAX_NODES:
                        continue
                    self.warn(path, f"required {r!r} has no schema; exposed as accepting any value")
                    props[r] = permissive()
                required.append(r)
        elif req is not None and req is not True:
            self.warn(path, "required is not a list; dropped")
        if props or depth == 0 or props_in is not None:
            out["properties"] = props
        if required:
            out["required"] = required
        ap = s.get("additionalProperties")
        if isinstance(ap, bool):
            out["additionalProperties"] = ap
        elif isinstance(ap, dict):
            out["additionalProperties"] = self.child(ap, depth + 1, refs, path, "additionalProperties")
        elif ap is not None:
            self.warn(path, "invalid additionalProperties dropped")

    def array_keywords(
        self, s: dict[str, Any], out: dict[str, Any], path: str, depth: int, refs: tuple[str, ...]
    ) -> None:
        items = s.get("items")
        if isinstance(items, list) or (items is None and isinstance(s.get("prefixItems"), list)):
            tup = items if isinstance(items, list) else s["prefixItems"]
            self.warn(path, "tuple items exposed as a list of any of the positions' schemas")
            items = {"anyOf": tup} if tup else True
        if items is False:
            out["maxItems"] = 0
            items = True
        out["items"] = self.child(items if items is not None else True, depth + 1, refs, path, "items")
        for k in ("minItems", "maxItems"):
            if k in s and k not in out:
                if _is_count(s[k]):
                    out[k] = int(s[k])
                else:
                    self.warn(path, f"invalid {k} dropped")

    def string_keywords(self, s: dict[str, Any], out: dict[str, Any], path: str) -> None:
        for k in ("minLength", "maxLength"):
            if k in s:
                if _is_count(s[k]):
                    out[k] = int(s[k])
                else:
                    self.warn(path, f"invalid {k} dropped")
        pat = s.get("pattern")
        if pat is not None:
            if ok_str(pat) and _compiles(pat):
                out["pattern"] = pat
            else:
                self.warn(path, "invalid pattern dropped")
        fmt = s.get("format")
        if fmt is not None:
            if isinstance(fmt, str) and fmt in FORMATS:
                out["format"] = fmt
            else:
                self.warn(path, f"format {fmt!r} dropped (not one the API knows)")

    def number_keywords(self, s: dict[str, Any], out: dict[str, Any], path: str) -> None:
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
            if not is_num(v) or (k == "multipleOf" and v <= 0):
                self.warn(path, f"invalid {k} dropped")
                continue
            if (
                k in ("minimum", "maximum")
                and isinstance(s.get("exclusive" + k.capitalize()), bool)
                and s.get("exclusive" + k.capitalize())
            ):
                continue  # already turned into the exclusive form
            out[k] = v

    # -- the root --------------------------------------------------------------------------

    def root_object(self, out: dict[str, Any]) -> dict[str, Any]:
        """The API wants ``type: object`` with ``properties`` at the top; make it so."""
        t = out.get("type")
        if t == "object":
            out.setdefault("properties", {})
            return out
        if isinstance(t, list) and "object" in t:
            if t != _ANY_TYPES:
                self.warn("", f"top-level type {t!r} narrowed to object (tool arguments are an object)")
            res = {
                k: v
                for k, v in out.items()
                if k in ("description", "title", "properties", "required", "additionalProperties")
            }
            res.setdefault("properties", {})
            return {"type": "object", **res}
        if "anyOf" in out:
            objs = [b for b in out["anyOf"] if b.get("type") == "object"]
            if len(objs) != len(out["anyOf"]):
                self.warn("", "top-level anyOf branches that are not objects dropped")
            self.warn(
                "", "top-level anyOf flattened into one object (only fields required by every variant stay required)"
            )
            props: dict[str, Any] = {}
            for b in objs:
                for k, v in b.get("properties", {}).items():
                    if k not in props:
                        props[k] = v
                    elif props[k] != v:
                        prev = props[k]["anyOf"] if set(props[k]) == {"anyOf"} else [props[k]]
                        props[k] = {"anyOf": prev + [v]} if v not in prev else props[k]
            required = [
                r
                for r in (objs[0].get("required", []) if objs else [])
                if all(r in b.get("required", []) for b in objs)
            ]
            res: dict[str, Any] = {"type": "object", "properties": props}
            if required:
                res["required"] = required
            for k in ("description", "title"):
                if k in out:
                    res[k] = out[k]
            return res
        self.warn("", f"top-level type {t!r} is not an object; exposed as an object without parameters")
        res = {"type": "object", "properties": {}}
        if "description" in out:
            res["description"] = out["description"]
        return res


def sanitize_schema(schema: object) -> tuple[dict[str, Any], list[str]]:
    """A schema the OpenAI function API accepts, and what had to change. Never raises."""
    try:
        if schema is None:
            return {"type": "object", "properties": {}}, []
        if not isinstance(schema, dict):
            return {"type": "object", "properties": {}}, [
                f"/: input schema is a {type(schema).__name__}, not an object; no parameters exposed"
            ]
        if _fast_clean(schema):
            props = schema.get("properties", {})
            out = {k: v for k, v in schema.items() if k != "$schema"}
            out["properties"] = {k: dict(v) for k, v in props.items()}
            return out, []
        san = _Sanitizer(schema)
        out = san.dialect_root(schema)
        if out is None:
            out = san.root_object(san.walk(schema, "", 0, ()))
        return out, san.warnings
    except RecursionError:
        return {"type": "object", "properties": {}}, ["/: schema too deeply nested to read; no parameters exposed"]
    except Exception as e:  # noqa: BLE001 - last line of defence: a schema must never break a catalogue
        return {"type": "object", "properties": {}}, [
            f"/: schema could not be sanitised ({type(e).__name__}); no parameters exposed"
        ]


_FAST_LEAF = {"type", "description", "title"}


def _fast_clean(schema: dict[str, Any]) -> bool:
    """Whether ``schema`` is the everyday shape that is already fine: skips the full walk.

    Accepts only ``{type: object, properties: {name: {type: scalar, description?, title?}}, required?}``
    with string keys and a valid ``required``; anything else takes the careful path.
    """
    if schema.get("type") != "object":
        return False
    for k in schema:
        if k not in ("type", "properties", "required", "description", "title", "additionalProperties", "$schema"):
            return False
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        return False
    for name, p in props.items():
        if not isinstance(name, str) or not isinstance(p, dict) or not name.isascii():
            return False
        t = p.get("type")
        if t not in ("string", "integer", "number", "boolean") or not p.keys() <= _FAST_LEAF:
            return False
        for k in ("description", "title"):
            if k in p and not (isinstance(p[k], str) and p[k].isascii()):
                return False
    req = schema.get("required")
    if req is not None and (
        not isinstance(req, list)
        or not all(isinstance(r, str) and r in props for r in req)
        or len(set(req)) != len(req)
    ):
        return False
    for k in ("description", "title"):
        if k in schema and not (isinstance(schema[k], str) and schema[k].isascii()):
            return False
    ap = schema.get("additionalProperties")
    return ap is None or isinstance(ap, bool)

