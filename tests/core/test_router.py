"""The tool router: a model-visible name goes back to the one provider (and server) that owns
it; a name clash is won by the earlier provider, and no MCP server can shadow a native or
Python tool; a name nobody owns is an output that lists what exists."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.core.function_tools import FunctionTools
from nbagent.core.router import ToolRouter
from tests.core.test_session import outputs_by_call
from tests.mcp.conftest import records, server_cfg


def call(tool: str, **arguments) -> dict:
    return {"name": tool, "arguments": arguments}


async def test_the_same_tool_on_two_servers_reaches_the_server_the_model_named(home: Path, script, tmp_path: Path) -> None:
    left, right = tmp_path / "left.jsonl", tmp_path / "right.jsonl"
    servers = {"left": server_cfg("features.py", left, trusted=True), "right": server_cfg("features.py", right, trusted=True)}
    model = script(
        {"tool_calls": [call("mcp__right__read_note", key="r1")]},
        {"tool_calls": [call("mcp__left__read_note", key="l1"), call("mcp__right__read_note", key="r2")]},
        {"text": "read"},
    )
    async with Session(model=model, policy="full-auto", mcp_servers=servers) as session:
        result = await asyncio.wait_for(session.run("read on both"), 60)
        names = sorted(s.name for s in session._tools() if s.raw_name == "read_note")
    assert result.ok
    assert names == ["mcp__left__read_note", "mcp__right__read_note"]
    assert [r["key"] for r in records(left)] == ["l1"]
    assert [r["key"] for r in records(right)] == ["r1", "r2"]
    calls = [i for i in result.items if type(i).__name__ == "FunctionCall"]
    assert [(c.server, c.raw_tool) for c in calls] == [("right", "read_note"), ("left", "read_note"), ("right", "read_note")]


async def test_a_server_tool_named_like_a_python_tool_does_not_shadow_it(home: Path, script, tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    ran: list[str] = []
    model = script({"tool_calls": [call("read_note", key="py"), call("mcp__feat__read_note", key="srv")]}, {"text": "ok"})
    servers = {"feat": server_cfg("features.py", record, trusted=True)}
    async with Session(model=model, policy="full-auto", mcp_servers=servers) as session:
        session.register_tool(lambda key: ran.append(key) or "python", name="read_note", read_only=True)
        result = await asyncio.wait_for(session.run("read"), 60)
    assert ran == ["py"] and [r["key"] for r in records(record)] == ["srv"]
    by_name = {i.name: i.call_id for i in result.items if type(i).__name__ == "FunctionCall"}
    outputs = outputs_by_call(result.items)
    assert outputs[by_name["read_note"]].output == "python"
    assert "srv" in outputs[by_name["mcp__feat__read_note"]].output


async def test_on_a_name_clash_the_native_provider_wins_and_the_catalogue_lists_the_name_once(home: Path, script) -> None:
    ran: list[str] = []
    native = FunctionTools()
    native.register(lambda: ran.append("native") or "native", name="lookup", description="the notebook's own")
    model = script({"tool_calls": [call("lookup")]}, {"text": "ok"})
    async with Session(model=model, policy="full-auto") as session:
        session.register_tool(lambda: ran.append("python") or "python", name="lookup", description="the user's")
        session.add_provider(native)
        listed = [s for s in session._tools() if s.name == "lookup"]
        result = await asyncio.wait_for(session.run("look up"), 10)
    assert [s.description for s in listed] == ["the notebook's own"]
    assert ran == ["native"]
    assert next(iter(outputs_by_call(result.items).values())).output == "native"


async def test_an_unknown_name_is_an_output_naming_every_tool_and_the_turn_goes_on(home: Path, script, tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    servers = {"feat": server_cfg("features.py", record, trusted=True)}
    model = script(
        {"tool_calls": [call("mcp__feat__no_such_tool"), call("mcp__nobody__read_note", key="x")]},
        {"tool_calls": [call("mcp__feat__read_note", key="after")]},
        {"text": "found it"},
    )
    async with Session(model=model, policy="full-auto", mcp_servers=servers) as session:
        session.register_tool(lambda: "hi", name="greet")
        result = await asyncio.wait_for(session.run("call a tool that is not there"), 60)
        listed = {s.name for s in session._tools()}
    assert result.ok and result.text == "found it"
    missing_tool, missing_server, found = outputs_by_call(result.items).values()
    for output, name in ((missing_tool, "mcp__feat__no_such_tool"), (missing_server, "mcp__nobody__read_note")):
        assert output.is_error and output.status == "failed" and f"unknown tool {name!r}" in output.output
        assert all(tool in output.output for tool in listed)  # the model learns what it may call
    assert not found.is_error
    assert [r["key"] for r in records(record)] == ["after"]  # nothing unknown reached the server


def test_a_source_missing_a_member_is_refused_when_added_naming_what_it_lacks() -> None:
    """A duck-typed source with only ``list_tools`` and ``call_tool`` would fail at its first
    call (no ``current_definition``), inside a turn; the router says so when it is added."""

    class Partial:
        def list_tools(self) -> list:
            return []

        async def call_tool(self, *args: object) -> None:
            return None

    with pytest.raises(TypeError, match=r"Partial is not a tool source: it has no generation, current_definition, complete, withheld"):
        ToolRouter().add(Partial())  # type: ignore[arg-type]  # the point: it is not one
    router = ToolRouter()
    router.add(FunctionTools())
    assert router.catalogue() == {}
