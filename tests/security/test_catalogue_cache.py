"""The catalogue's schema cache never lets one server's schema decide what another server's tool
exposes: hostile schemas (deep nesting, ``$ref`` cycles, huge enums, self-containing objects)
beside near-copies of them on another server each get exactly what sanitising them alone gives."""

from __future__ import annotations

import copy
import json
from typing import Any

import mcp_types as types

from nbagent.config import McpServerConfig
from nbagent.mcp.catalog import CatalogBuilder, build_catalog
from nbagent.schema import definition_hash, make_strict, sanitize_schema

CFG = McpServerConfig(command="true")


def _deep(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        node = {"type": "object", "properties": {"x": node}}
    return node


def _hostile() -> list[dict[str, Any]]:
    cycle = {"type": "object", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
             "properties": {"p": {"$ref": "#/$defs/a"}, "q": {"$ref": "#"}}}  # fmt: skip
    fanout = {"type": "object", "$defs": {f"d{i}": {"type": "object", "properties": {
        "l": {"$ref": f"#/$defs/d{i + 1}"}, "r": {"$ref": f"#/$defs/d{i + 1}"}}} for i in range(30)},
        "properties": {"root": {"$ref": "#/$defs/d0"}}}  # fmt: skip
    return [
        _deep(200),
        cycle,
        fanout,
        {"type": "object", "properties": {"e": {"type": "string", "enum": [f"v{i}" for i in range(20_000)]}}},
        {"type": "object", "properties": {"e": {"type": "string", "enum": ["a", "a", 1, None, float("nan")]}}},
        {"type": "object", "properties": {"s": {"type": "string", "pattern": "(a+)+$", "format": "color"}}},
    ]


def _near_copy(schema: dict[str, Any]) -> dict[str, Any]:
    """The same schema with one value changed deep inside (or one property more)."""
    other = copy.deepcopy(schema)
    other.setdefault("properties", {})["extra"] = {"type": "integer", "maximum": 3}
    return other


def _tools(schemas: list[dict[str, Any]]) -> list[types.Tool]:
    return [types.Tool.model_validate({"name": f"t{i}", "inputSchema": s}) for i, s in enumerate(schemas)]


def _alone(schema: dict[str, Any]) -> str:
    """What the model would see of ``schema`` were it the only schema ever built."""
    parameters, warnings = sanitize_schema(schema)
    strict = make_strict(parameters)
    return json.dumps((strict if strict is not None else parameters, warnings), sort_keys=True)


def test_each_server_sees_only_what_its_own_schema_allows() -> None:
    hostile = _hostile()
    near = [_near_copy(s) for s in hostile]
    specs, _ = build_catalog({"evil": (CFG, _tools(hostile)), "good": (CFG, _tools(near)),
                              "twin": (CFG, _tools(copy.deepcopy(hostile)))})  # fmt: skip
    by_server: dict[str, list[Any]] = {}
    for spec in specs:
        by_server.setdefault(spec.server or "", []).append(spec)
    for server, schemas in (("evil", hostile), ("good", near), ("twin", hostile)):
        mine = sorted(by_server[server], key=lambda s: int(s.raw_name[1:]))
        for spec, schema in zip(mine, schemas, strict=True):
            assert json.dumps((spec.parameters, spec.warnings), sort_keys=True) == _alone(schema), spec.name
            assert spec.definition_hash == definition_hash("", schema, None)
    good = {s.raw_name: s for s in by_server["good"]}
    assert all("extra" in good[f"t{i}"].parameters["properties"] for i in range(len(near)))


def test_a_self_containing_schema_is_sanitised_without_the_cache_and_stays_apart() -> None:
    """An object that contains itself has no JSON text to key on: it is sanitised on its own
    every time and never shares an entry with a look-alike."""
    loop: dict[str, Any] = {"type": "object", "properties": {}}
    loop["properties"]["self"] = loop
    look_alike = {"type": "object", "properties": {"self": {"type": "object", "properties": {}}}}
    builder = CatalogBuilder()
    tools = [types.Tool.model_construct(name="loop", input_schema=loop),
             types.Tool.model_construct(name="plain", input_schema=look_alike)]  # fmt: skip
    specs, _ = builder.build({"s": (1, CFG, tools)})
    by_name = {s.raw_name: s for s in specs}
    assert any("self-containing" in w for w in by_name["loop"].warnings)
    assert by_name["plain"].warnings == []
    again, _ = builder.build({"s": (2, CFG, tools)})
    assert [s.warnings for s in again] == [s.warnings for s in specs]


def test_schemas_a_fast_encoder_would_write_alike_keep_their_own_hash_and_parameters() -> None:
    """NaN and null are one text to orjson: the definition hash and the schema cache still tell
    them apart, as Python's encoder, which wrote the hashes approvals remember, did."""
    values = [float("nan"), None, float("inf"), 1e-07, 1]
    schemas = [{"type": "object", "properties": {"x": {"type": "number", "maximum": v}}} for v in values]
    specs, _ = build_catalog({"s": (CFG, _tools(schemas))})
    mine = sorted(specs, key=lambda s: int(s.raw_name[1:]))
    assert len({s.definition_hash for s in mine}) == len(schemas)
    for spec, schema in zip(mine, schemas, strict=True):
        assert spec.definition_hash == definition_hash("", schema, None)
        assert json.dumps((spec.parameters, spec.warnings), sort_keys=True) == _alone(schema)
