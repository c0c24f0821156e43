"""Rewriting a schema's references and combinators away (``$ref``, ``allOf``, ``oneOf``,
``anyOf``): the rules for resolving, merging and branching that the walk applies at each node."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from nbagent.schema.sanitize.rules import (
    ANNOTATION_KEYS,
    BOUNDS,
    LEAF_TYPES,
    SILENT_DROP,
    Walker,
    infer_types,
    json_safe,
    norm_types,
    permissive,
)
from nbagent.schema.subset import is_num, ok_str


def _text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, sort_keys=True)


def resolve(san: Walker, ref: str) -> Any:
    """The target of a local JSON pointer ``#/...``; ``None`` when absent or not local."""
    if ref in ("#", ""):
        return san.root
    if not ref.startswith("#/"):
        return None
    node = san.root
    for part in ref[2:].split("/"):
        part = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def expand(san: Walker, s: dict[str, Any], path: str, refs: tuple[str, ...]) -> tuple[Any, tuple[str, ...]]:
    """Replace ``$ref`` at the top of ``s`` by its target (siblings merged in)."""
    for _ in range(64):
        if not isinstance(s, dict) or "$ref" not in s:
            return s, refs
        ref = s["$ref"]
        rest = {k: v for k, v in s.items() if k != "$ref"}
        if not isinstance(ref, str):
            san.warn(path, "dropped a non-string $ref")
            s = rest
            continue
        if ref in refs:
            san.warn(path, f"recursive $ref {ref!r} cut; the inner level accepts any value of its type")
            return leaf(resolve(san, ref), rest), refs
        target = resolve(san, ref)
        if target is None:
            san.warn(path, f"unresolvable $ref {ref!r} dropped (only local #/... references are followed)")
            s = rest
            continue
        refs = refs + (ref,)
        if target is True or (isinstance(target, dict) and not target):
            s = rest
        elif not isinstance(target, dict):
            return target, refs
        elif not rest or all(k in ANNOTATION_KEYS for k in rest):
            s = {**target, **rest}
        else:
            s = {"allOf": [target, rest]}
    san.warn(path, "$ref chain too long; made permissive")
    return True, refs


# -- leaves ----------------------------------------------------------------------------


def leaf(s: Any, annotations: dict[str, Any] | None = None) -> dict[str, Any]:
    """A childless stand-in for ``s``: its (inferred) type and description, nothing more."""
    types = None
    if isinstance(s, dict) and "$ref" not in s:
        types = norm_types(s.get("type")) or infer_types(s)
    if not types:
        out = permissive()
    else:
        out = {"type": types[0] if len(types) == 1 else types}
        if "array" in types:
            out["items"] = {"type": list(LEAF_TYPES)}
    src = {**(s if isinstance(s, dict) else {}), **(annotations or {})}
    for k in ("description", "title"):
        if ok_str(src.get(k)):
            out[k] = src[k]
    return out


def merge(san: Walker, a: dict[str, Any], b: dict[str, Any], path: str) -> dict[str, Any]:
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
            ta, tb = norm_types(av), norm_types(bv)
            if ta is None or tb is None:
                out[k] = av if ta is not None else bv
                continue
            both = [t for t in ta if t in tb or (t == "integer" and "number" in tb)]
            both += [t for t in tb if t == "integer" and "number" in ta and t not in both]
            if both:
                out[k] = both
            else:
                san.warn(path, f"allOf branches disagree on type ({av!r} vs {bv!r}); kept the first")
        elif k == "enum" and isinstance(av, list) and isinstance(bv, list):
            common = [x for x in av if any(x == y and type(x) is type(y) for y in bv)]
            if common:
                out[k] = common
            else:
                san.warn(path, "allOf branches share no enum value; kept the first")
        elif k in BOUNDS and is_num(av) and is_num(bv):
            out[k] = max(av, bv) if BOUNDS[k] == "min" else min(av, bv)
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
                san.warn(path, f"allOf of two large {k} lists; kept the first")
        elif k in ANNOTATION_KEYS or k in SILENT_DROP:
            continue
        else:
            san.warn(path, f"allOf branches disagree on {k!r}; kept the first")
    return out


def normalise(san: Walker, s: dict[str, Any], path: str, refs: tuple[str, ...]) -> tuple[Any, tuple[str, ...]]:
    """Rewrite ``$ref``, ``allOf``, ``oneOf`` and single-branch ``anyOf`` away at this level."""
    for _ in range(32):
        s, refs = expand(san, s, path, refs)
        if not isinstance(s, dict):
            return s, refs
        if "allOf" in s:
            branches = s["allOf"]
            merged = {k: v for k, v in s.items() if k != "allOf"}
            if not isinstance(branches, list):
                san.warn(path, "dropped a non-list allOf")
                branches = []
            for b in branches:
                b, refs = expand(san, b, path, refs)
                if b is True or b is None:
                    continue
                if not isinstance(b, dict):
                    san.warn(path, "dropped an allOf branch that is not a schema")
                    continue
                merged = merge(san, merged, b, path)
            s = merged
            continue
        if "oneOf" in s:
            rest = {k: v for k, v in s.items() if k != "oneOf"}
            one = s["oneOf"]
            if isinstance(one, list) and len(one) > 1:
                san.warn(path, "oneOf exposed as anyOf (exclusivity not enforced)")
            if not isinstance(one, list):
                san.warn(path, "dropped a non-list oneOf")
                s = rest
            else:
                s = merge(san, rest, {"anyOf": one}, path) if "anyOf" in rest else {**rest, "anyOf": one}
            continue
        if "anyOf" in s:
            branches = s["anyOf"]
            rest = {k: v for k, v in s.items() if k != "anyOf"}
            if not isinstance(branches, list):
                san.warn(path, "dropped a non-list anyOf")
                s = rest
                continue
            live = [b for b in branches if b is not False]
            if any(b is True or b is None or b == {} for b in live):
                s = rest  # one branch accepts anything: the anyOf constrains nothing
                continue
            if len(live) == 0:
                san.warn(path, "anyOf without usable branches dropped")
                s = rest
                continue
            if len(live) == 1:
                b, refs = expand(san, live[0], path, refs)
                s = merge(san, rest, b, path) if isinstance(b, dict) else rest
                continue
        return s, refs
    san.warn(path, "combinators nested too deeply; made permissive")
    return True, refs


def any_of(
    san: Walker, s: dict[str, Any], out: dict[str, Any], path: str, depth: int, refs: tuple[str, ...]
) -> dict[str, Any]:
    """Several branches: the siblings are pushed into each, so each branch is complete."""
    rest = {k: v for k, v in s.items() if k not in ("anyOf", "description", "title", "default")}
    branches: list[dict[str, Any]] = []
    for i, b in enumerate(x for x in s["anyOf"] if x is not False):
        if rest and isinstance(b, dict):
            b, _ = expand(san, b, path, refs)
            b = merge(san, rest, b, path) if isinstance(b, dict) else rest
        sub = san.child(b, depth + 1, refs, path, "anyOf", str(i))
        flat = sub["anyOf"] if set(sub) <= {"anyOf", "description", "title"} and "anyOf" in sub else [sub]
        for f in flat:
            # A branch is dropped when its JSON text repeats one kept; equal text implies ==
            # (the output has no NaN), so the text is needed only to confirm an == match.
            if not any(f == b and _text(f) == _text(b) for b in branches):
                branches.append(f)
    if len(branches) == 1:
        return {**branches[0], **{k: v for k, v in out.items() if k not in branches[0]}}
    out["anyOf"] = branches
    if "default" in s and json_safe(s["default"]):
        out["default"] = s["default"]
    return out
