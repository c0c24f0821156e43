"""The sanitiser's walk over a schema: node by node, each rewritten by the combinator rules
(``combinators.py``) and read keyword family by family (``keywords.py``), with the short ways
of ``fast.py`` for whatever is already in the accepted form."""

from __future__ import annotations

from typing import Any

from nbagent.schema.sanitize.combinators import any_of, leaf, normalise
from nbagent.schema.sanitize.fast import array_shape, clean_leaf, copy_leaf, object_shape, text_first
from nbagent.schema.sanitize.keywords import (
    allowed_types,
    annotation_keywords,
    enum_keyword,
    typed_keywords,
    warn_unsupported,
)
from nbagent.schema.sanitize.rules import (
    DROP,
    GENERIC_KEYS,
    MAX_NODES,
    OBJECT_KEYS,
    SILENT_DROP,
    permissive,
    read,
)
from nbagent.schema.subset import MAX_DEPTH

MAX_WARNINGS = 40


class NotPlain(Exception):
    """A node below ``Sanitizer.plain`` needs the full rules."""


class Sanitizer:
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

    # -- the walk --------------------------------------------------------------------------

    def walk(self, s: Any, path: str, depth: int, refs: tuple[str, ...]) -> dict[str, Any]:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            self.warn("", f"schema larger than {MAX_NODES} nodes; the rest is permissive")
            return leaf(s)
        if s.__class__ is dict and depth < MAX_DEPTH and clean_leaf(s):
            return copy_leaf(s)  # the everyday leaf (it has no children, so it is no ancestor)
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
            return leaf(s)
        if depth >= MAX_DEPTH:
            self.warn(path, f"nested deeper than {MAX_DEPTH} levels; the rest accepts any value of its type")
            return leaf(s)
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
            except NotPlain:
                self.nodes = start
                self.not_plain.add(id(s))
        return self.walk(s, "/".join(path), depth, refs)

    def plain(self, s: dict[str, Any], depth: int) -> dict[str, Any]:
        """What ``walk`` gives a subtree every node of which is in the accepted form, counting its
        nodes as the walk does; ``NotPlain`` (nodes uncounted by the caller) when any node is
        not. It needs no path (no warning is possible) and no ancestor set: a cycle runs into the
        depth limit, and the walk then tells it apart."""
        if self.nodes >= MAX_NODES:
            raise NotPlain
        self.nodes += 1
        if clean_leaf(s):
            return copy_leaf(s)
        t = s.get("type")
        if t == "object":
            shape = object_shape(s)
            if shape is None:
                raise NotPlain
            return self.object_out(s, shape, text_first(s), depth, (), "", plain=True)
        if t == "array":
            items = array_shape(s)
            if items is None:
                raise NotPlain
            out = dict(s)
            out["items"] = self.plain_below(items, depth + 1)
            return out
        raise NotPlain

    def plain_below(self, s: Any, depth: int) -> dict[str, Any]:
        """``plain`` of a child: ``True`` counts a node and accepts anything, as in the walk."""
        if s is True:
            if self.nodes >= MAX_NODES:
                raise NotPlain
            self.nodes += 1
            return permissive()
        if s.__class__ is not dict or depth >= MAX_DEPTH:
            raise NotPlain
        try:
            return self.plain(s, depth)
        except NotPlain:
            self.not_plain.add(id(s))
            raise

    def object_out(
        self,
        s: dict[str, Any],
        shape: tuple[dict[str, Any], list[str] | None, Any],
        out: dict[str, Any],
        depth: int,
        refs: tuple[str, ...],
        path: str,
        *,
        plain: bool,
    ) -> dict[str, Any]:
        """``out`` completed from a clean object's ``shape`` (``object_shape``): properties (always
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
        extra = s.keys() - OBJECT_KEYS
        if not extra or not extra <= SILENT_DROP or s.get("type") != "object":
            return None
        shape = object_shape({k: v for k, v in s.items() if k not in extra})
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

    def clean_container(self, s: dict[str, Any], path: str, depth: int, refs: tuple[str, ...]) -> dict[str, Any] | None:
        """An object or array already in the accepted form, its children walked as usual; ``None``
        when anything in it needs the full rules. Equal to what they would produce, just sooner."""
        t = s.get("type")
        if t == "object":
            shape = object_shape(s)
            if shape is None:
                return None
            return self.object_out(s, shape, text_first(s), depth, refs, path, plain=False)
        if t == "array":
            items = array_shape(s)
            if items is None:
                return None
            out = dict(s)
            out["items"] = self.child(items, depth + 1, refs, path, "items")
            return out
        return None

    def node(self, s: dict[str, Any], path: str, depth: int, refs: tuple[str, ...]) -> dict[str, Any]:
        clean = self.clean_container(s, path, depth, refs)
        if clean is not None:
            return clean
        original = s
        s, refs = normalise(self, s, path, refs)
        if not isinstance(s, dict):
            return self.walk(s, path, depth, refs) if s is not True else permissive()
        if s is not original:  # a $ref or combinator rewritten away may leave a clean schema
            if clean_leaf(s):
                return copy_leaf(s)
            clean = self.clean_container(s, path, depth, refs)
            if clean is not None:
                return clean
        out = annotation_keywords(self, s, path)
        if "anyOf" in s:
            return any_of(self, s, out, path, depth, refs)
        s, types = allowed_types(self, s, path)
        if "enum" in s:
            types = enum_keyword(self, s, types, out, path)
        result: dict[str, Any] = {"type": types[0] if len(types) == 1 else types, **out}
        if "default" in s:
            default = read("default", s["default"])
            if default is not DROP:
                result["default"] = default
            else:
                self.warn(path, "default that is not plain JSON dropped")
        used = typed_keywords(self, s, types, result, path, depth, refs)
        if not s.keys() <= GENERIC_KEYS:
            warn_unsupported(self, s, used, types, path)
        return result
