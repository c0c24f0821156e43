"""The catalogue build: a change on one server leaves every other server's tools as they were,
a schema several tools send is sanitised once, the build runs off the event loop, and the
router reads the merged catalogue again only when a provider changed."""

from __future__ import annotations

import gc
import threading
from typing import Any

import mcp_types as types
import pytest

from nbagent.config import McpServerConfig
from nbagent.core.function_tools import FunctionTools
from nbagent.core.router import ToolRouter
from nbagent.mcp import catalog
from nbagent.mcp.catalog import CatalogBuilder, build_catalog
from nbagent.protocol import McpToolsChanged
from nbagent.schema import definition_hash
from tests.waiting import until

from .conftest import Harness, call_info

CFG = McpServerConfig(command="true")


def tool(name: str, schema: dict[str, Any], description: str = "does a thing") -> types.Tool:
    return types.Tool.model_validate({"name": name, "description": description, "inputSchema": schema})


def rich(enum: list[str]) -> dict[str, Any]:
    """A schema with nesting, a ``$ref`` and an enum, as pydantic writes them."""
    return {
        "type": "object",
        "$defs": {"Kind": {"type": "string", "enum": enum, "title": "Kind"}},
        "properties": {
            "kind": {"$ref": "#/$defs/Kind"},
            "filter": {"type": "object", "properties": {"q": {"type": "string"}, "n": {"type": "integer"}}},
            "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}], "default": None},
        },
        "required": ["kind"],
    }


@pytest.fixture
def sanitised(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every schema the build hands to the sanitiser, in order."""
    seen: list[dict[str, Any]] = []
    real = catalog.sanitize_schema

    def counting(schema: Any) -> Any:
        seen.append(schema)
        return real(schema)

    monkeypatch.setattr(catalog, "sanitize_schema", counting)
    return seen


def test_identical_schemas_are_sanitised_once_across_tools_and_servers(sanitised: list[dict[str, Any]]) -> None:
    tools = [tool(f"t{i}", rich(["a", "b"])) for i in range(5)] + [tool("other", rich(["a", "c"]))]
    specs, _ = build_catalog({"one": (CFG, tools), "two": (CFG, list(tools))})
    assert len(specs) == 12
    assert len(sanitised) == 2  # two distinct schemas among twelve tools
    by_name = {s.name: s for s in specs}
    assert by_name["mcp__one__t0"].parameters == by_name["mcp__two__t3"].parameters
    assert by_name["mcp__one__other"].parameters["properties"]["kind"]["enum"] == ["a", "c"]
    assert by_name["mcp__two__t1"].parameters["properties"]["kind"]["enum"] == ["a", "b"]


def test_a_schema_in_another_key_order_is_its_own_and_keeps_its_order(sanitised: list[dict[str, Any]]) -> None:
    """The cache key is the content, and the order the model sees properties in is part of it."""
    first = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
    second = {"type": "object", "properties": {"b": {"type": "integer"}, "a": {"type": "string"}}}
    specs, _ = build_catalog({"one": (CFG, [tool("x", first)]), "two": (CFG, [tool("x", second)])})
    assert len(sanitised) == 2
    assert [list(s.parameters["properties"]) for s in specs] == [["a", "b"], ["b", "a"]]
    assert specs[0].definition_hash == specs[1].definition_hash  # the same definition, reordered


def test_every_tool_hashes_its_own_full_definition() -> None:
    """Shared sanitising never shares a definition hash: approvals stay bound to each tool's
    description, schema and annotations."""
    schema = rich(["a", "b"])
    specs, _ = build_catalog({"one": (CFG, [tool("x", schema, "reads"), tool("y", schema, "deletes everything")])})
    assert [s.definition_hash for s in specs] == [
        definition_hash("reads", schema, None),
        definition_hash("deletes everything", schema, None),
    ]
    assert specs[0].definition_hash != specs[1].definition_hash


def test_a_change_on_one_server_rebuilds_only_its_tools(sanitised: list[dict[str, Any]]) -> None:
    builder = CatalogBuilder()
    servers = {name: ((name, 1), CFG, [tool(f"{name}_{i}", rich([name, str(i)])) for i in range(3)])
               for name in ("a", "b", "c")}  # fmt: skip
    before, _ = builder.build(servers)
    assert len(sanitised) == 9
    servers["b"] = (("b", 2), CFG, [tool("b_0", rich(["b", "changed"])), tool("b_new", rich(["new"]))])
    after, _ = builder.build(servers)
    assert len(sanitised) == 11  # only b's two new schemas
    old = {s.name: s for s in before}
    for spec in after:
        if spec.server != "b":
            assert spec is old[spec.name], spec.name  # the very same object
    assert {s.name for s in after if s.server == "b"} == {"mcp__b__b_0", "mcp__b__b_new"}
    del servers["c"]
    assert {s.server for s in builder.build(servers)[0]} == {"a", "b"}


def test_a_name_clash_from_another_server_renames_only_the_clashing_tool() -> None:
    """Names are a function of every server's tools, so a server that arrives with a clashing
    name renames the tool it clashes with; the first server's other tools stay the same objects."""
    builder = CatalogBuilder()
    servers = {"a": (1, CFG, [tool("b__c", {"type": "object"}), tool("keep", {"type": "object"})])}
    before = {s.raw_name: s for s in builder.build(servers)[0]}
    assert before["b__c"].name == "mcp__a__b__c"
    servers["a__b"] = (1, CFG, [tool("c", {"type": "object"})])
    after, warnings = builder.build(servers)
    names = {(s.server, s.raw_name): s for s in after}
    assert names[("a", "b__c")].name != "mcp__a__b__c" and names[("a__b", "c")].name != "mcp__a__b__c"
    assert names[("a", "keep")] is before["keep"]
    assert any("clash" in w for w in warnings)


def test_the_incremental_build_equals_a_build_from_nothing() -> None:
    builder = CatalogBuilder()
    servers = {name: (1, CFG, [tool(f"t{i}", rich([name, str(i % 2)])) for i in range(4)]) for name in "abc"}
    builder.build(servers)
    servers["b"] = (2, CFG, [tool("t9", rich(["z"]))])
    incremental, _ = builder.build(servers)
    fresh, _ = build_catalog({name: (cfg, tools) for name, (_, cfg, tools) in servers.items()})
    assert [s.model_dump() for s in incremental] == [s.model_dump() for s in fresh]


async def test_the_build_runs_in_a_worker_thread_and_a_change_keeps_other_servers_specs(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[int] = []
    real = CatalogBuilder.build

    def recording(self: CatalogBuilder, servers: Any, **kw: Any) -> Any:
        threads.append(threading.get_ident())
        return real(self, servers, **kw)

    monkeypatch.setattr(CatalogBuilder, "build", recording)
    manager = await harness.start({"feat": harness.cfg("features.py"), "other": harness.cfg("crashy.py")})
    assert threads and threading.get_ident() not in threads
    others = {s.name: s for s in manager.list_tools() if s.server == "other"}
    assert others
    grow = next(s for s in manager.list_tools() if s.raw_name == "grow")
    assert not (await manager.call_tool(grow, {}, call_info())).is_error
    await until(lambda: harness.of(McpToolsChanged), "tools/list_changed", 10)
    after = manager.list_tools()
    assert any(s.raw_name == "extra" for s in after)  # in the catalogue when the event says so
    for spec in after:
        if spec.server == "other":
            assert spec is others[spec.name]


async def test_the_router_merges_again_only_when_a_provider_changed(harness: Harness) -> None:
    manager = await harness.start({"feat": harness.cfg("features.py")})
    functions = FunctionTools()
    router = ToolRouter()
    router.add(functions)
    router.add(manager)
    first = router.catalogue()
    assert router.catalogue() is first and router.specs() is router.specs()
    with pytest.raises(TypeError):
        first["x"] = first["mcp__feat__grow"]  # type: ignore[index]  # shared, so read-only
    functions.register(lambda: "hi", name="greet")
    second = router.catalogue()
    assert second is not first and "greet" in second and router.catalogue() is second
    grow = second["mcp__feat__grow"][0]
    assert not (await manager.call_tool(grow, {}, call_info())).is_error
    await until(lambda: "mcp__feat__extra" in router.catalogue(), "the new tool in the router", 10)
    await manager.remove("feat")
    assert not any(name.startswith("mcp__feat__") for name in router.catalogue())


def test_what_a_build_made_waits_for_no_young_collection_and_the_collector_is_left_on() -> None:
    """A build pauses the cyclic collector; were its objects left young, the first pass after
    it would walk all of them at once, holding the GIL while the event loop waits."""
    was = gc.isenabled()
    gc.enable()
    try:
        specs, _ = build_catalog({"one": (CFG, [tool(f"t{i}", rich(["a", str(i)])) for i in range(200)])})
        assert gc.isenabled()
        young = {id(o) for o in gc.get_objects(generation=0) + gc.get_objects(generation=1)}
    finally:
        (gc.enable if was else gc.disable)()
    assert len(specs) == 200
    assert not [s for s in specs if id(s.parameters) in young or id(s.input_schema) in young]
