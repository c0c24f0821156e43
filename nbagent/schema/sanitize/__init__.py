"""MCP ``inputSchema`` -> a schema the OpenAI function API accepts (DESIGN §4).

Servers send any JSON Schema dialect, broken ones included; models accept a subset. The
sanitiser keeps what constrains the arguments in a form the API takes (a whitelist of
keywords, ``rules.py``), rewrites what it can (local ``$ref``, ``const``, single-branch
combinators, ``allOf``, ``oneOf``, ``nullable``, tuple ``items``, draft-4 ``exclusiveMinimum``;
``combinators.py``, ``keywords.py``) and degrades the rest to a permissive schema with a
warning. It never raises: a tool with a hostile schema is still callable, it just tells the
model less. What is already in the accepted form is copied, not walked (``fast.py``).

Its output is held to ``openai_schema_problems`` (``check.py``).
"""

from __future__ import annotations

from typing import Any

from nbagent.schema.sanitize.fast import flat_root
from nbagent.schema.sanitize.rules import ANY_TYPES, MAX_NODES
from nbagent.schema.sanitize.walk import Sanitizer

__all__ = ["MAX_NODES", "sanitize_schema"]


def sanitize_schema(schema: object) -> tuple[dict[str, Any], list[str]]:
    """A schema the OpenAI function API accepts, and what had to change. Never raises."""
    try:
        if schema is None:
            return {"type": "object", "properties": {}}, []
        if not isinstance(schema, dict):
            return {"type": "object", "properties": {}}, [
                f"/: input schema is a {type(schema).__name__}, not an object; no parameters exposed"
            ]
        out = flat_root(schema)
        if out is not None:
            return out, []
        san = Sanitizer(schema)
        out = san.dialect_root(schema)
        if out is None:
            out = root_object(san, san.walk(schema, "", 0, ()))
        return out, san.warnings
    except RecursionError:
        return {"type": "object", "properties": {}}, ["/: schema too deeply nested to read; no parameters exposed"]
    except Exception as e:  # noqa: BLE001 - last line of defence: a schema must never break a catalogue
        return {"type": "object", "properties": {}}, [
            f"/: schema could not be sanitised ({type(e).__name__}); no parameters exposed"
        ]


_FAST_LEAF = {"type", "description", "title"}


def root_object(san: Sanitizer, out: dict[str, Any]) -> dict[str, Any]:
    """The API wants ``type: object`` with ``properties`` at the top; make it so."""
    t = out.get("type")
    if t == "object":
        out.setdefault("properties", {})
        return out
    if isinstance(t, list) and "object" in t:
        if t != ANY_TYPES:
            san.warn("", f"top-level type {t!r} narrowed to object (tool arguments are an object)")
        res: dict[str, Any] = {
            k: v
            for k, v in out.items()
            if k in ("description", "title", "properties", "required", "additionalProperties")
        }
        res.setdefault("properties", {})
        return {"type": "object", **res}
    if "anyOf" in out:
        objs = [b for b in out["anyOf"] if b.get("type") == "object"]
        if len(objs) != len(out["anyOf"]):
            san.warn("", "top-level anyOf branches that are not objects dropped")
        san.warn("", "top-level anyOf flattened into one object (only fields required by every variant stay required)")
        props: dict[str, Any] = {}
        for b in objs:
            for k, v in b.get("properties", {}).items():
                if k not in props:
                    props[k] = v
                elif props[k] != v:
                    prev = props[k]["anyOf"] if set(props[k]) == {"anyOf"} else [props[k]]
                    props[k] = {"anyOf": prev + [v]} if v not in prev else props[k]
        required = [
            r for r in (objs[0].get("required", []) if objs else []) if all(r in b.get("required", []) for b in objs)
        ]
        res = {"type": "object", "properties": props}
        if required:
            res["required"] = required
        for k in ("description", "title"):
            if k in out:
                res[k] = out[k]
        return res
    san.warn("", f"top-level type {t!r} is not an object; exposed as an object without parameters")
    res = {"type": "object", "properties": {}}
    if "description" in out:
        res["description"] = out["description"]
    return res
