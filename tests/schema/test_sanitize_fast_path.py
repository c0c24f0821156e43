"""The sanitiser's one-pass copy of clean subtrees, and its short way with a clean root that
names its dialect or holds its definitions, give exactly what the full walk gives: the same
output (key order included) and the same warnings, for fuzzed schemas, realistic ones, and the
edges where the two could part: a cycle inside clean objects or back to the root, clean nesting
past the depth limit, and a clean tree wider than the node budget."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from nbagent.schema import sanitize_schema
from nbagent.schema.sanitize import MAX_NODES
from nbagent.schema.sanitize.walk import NotPlain, Sanitizer
from nbagent.schema.subset import MAX_DEPTH
from tests.schema.test_catalogue_golden import bench
from tests.schema.test_schema import schemas


def _refuse(self: Any, s: Any, depth: int) -> Any:
    raise NotPlain


def _both(schema: Any) -> tuple[str, str]:
    """``repr`` of what the sanitiser gives with the one-pass copy, and with the walk alone."""
    fast = repr(sanitize_schema(schema))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(Sanitizer, "plain", _refuse)
        m.setattr(Sanitizer, "dialect_root", lambda self, s: None)
        walked = repr(sanitize_schema(schema))
    return fast, walked


def _clean_tree(depth: int, width: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string", "description": "leaf"}
    for i in range(depth):
        props = {f"p{j}": {"type": "integer", "minimum": j} for j in range(width)}
        props["next"] = node if i % 2 else {"type": "array", "items": node, "maxItems": 3}
        node = {"description": f"level {i}", "type": "object", "properties": props, "required": ["next"]}
    return node


def _edges() -> list[Any]:
    loop: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}
    loop["properties"]["self"] = {"type": "object", "properties": {"back": loop}}
    wide = {"type": "object", "properties": {
        f"o{i}": {"type": "object", "properties": {f"l{j}": {"type": "boolean"} for j in range(60)}}
        for i in range(MAX_NODES // 60 + 5)}}  # fmt: skip
    back: dict[str, Any] = {"$schema": "x", "type": "object", "properties": {"a": {"type": "string"}}}
    back["properties"]["root"] = {"type": "array", "items": back}
    return [
        {"type": "object", "properties": {"x": _clean_tree(MAX_DEPTH + 4, 2)}},
        {"type": "object", "properties": {"x": _clean_tree(MAX_DEPTH - 2, 3)}, "$schema": "x"},
        {"type": "object", "properties": {"loop": loop}},
        wide,
        {"type": "object", "properties": {"a": {"type": "array"}, "b": {"type": "object", "additionalProperties": {
            "type": "object", "properties": {"c": {"type": "string", "enum": ["x", "x"]}}}}}},
        {"title": "T", "$schema": 1, "description": "D", "type": "object", "required": ["a"],
         "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer", "maximum": 3}},
        {"$schema": "x", "type": "object"},
        {"type": "object", "title": "Arguments", "minProperties": 1, "$defs": {"K": {"type": "string", "enum": ["a"]},
         "M": {"type": "object", "properties": {"k": {"$ref": "#/$defs/K"}}}}, "properties": {
            "m": {"$ref": "#/$defs/M"}, "n": {"anyOf": [{"$ref": "#/$defs/K"}, {"type": "null"}], "default": None},
            "o": {"$ref": "#/$defs/missing"}}},
        {"type": "object", "$defs": {}, "x-vendor": 1, "properties": {}},
        {"$schema": "x", "type": "object", "description": None, "properties": {"a": {"type": "string"}}},
        back,
    ]  # fmt: skip


@pytest.mark.parametrize("case", range(len(_edges())))
def test_the_edges_come_out_as_the_walk_makes_them(case: int) -> None:
    fast, walked = _both(_edges()[case])
    assert fast == walked


def test_the_node_budget_and_the_depth_limit_still_warn(monkeypatch: pytest.MonkeyPatch) -> None:
    deep, _, loop, wide, *_ = _edges()
    assert any("deeper than" in w for w in sanitize_schema(deep)[1])
    assert any("self-containing" in w for w in sanitize_schema(loop)[1])
    assert any(f"larger than {MAX_NODES}" in w for w in sanitize_schema(wide)[1])


def test_realistic_schemas_come_out_as_the_walk_makes_them(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    for make in (bench.flat_schema, bench.nested_schema, bench.pydantic_schema):
        for _ in range(60):
            schema = make(rng)
            fast, walked = _both(schema)
            assert fast == walked, schema


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=schemas)
def test_fuzzed_schemas_come_out_as_the_walk_makes_them(schema: Any) -> None:
    for s in (schema, {"type": "object", "properties": {"p": schema, "q": {"type": "object", "properties": {"r": schema}}}}):
        fast, walked = _both(s)
        assert fast == walked, s
