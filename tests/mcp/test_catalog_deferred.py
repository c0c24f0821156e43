"""A catalogue with more MCP tools than one model request may carry (``max_model_tools``) is
built without sanitising its schemas; a tool's schema is made when the tool first goes into a
model request, and is then what an eager build would have made. Calls and approvals never wait
for it: they are bound to the raw definition, which both builds hash alike."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.config import Config
from nbagent.mcp.manager import McpConnectionManager
from tests.core.conftest import home, script  # noqa: F401 - fixtures
from tests.mcp.conftest import Harness, call_info, server_cfg

PLACEHOLDER = {"type": "object", "properties": {}}


async def _manager(harness: Harness, cap: int) -> McpConnectionManager:
    manager = McpConnectionManager(
        {"feat": harness.cfg("features.py")}, harness._on_event, harness.answers, harness.tmp / f"logs{cap}",
        config=Config(max_model_tools=cap),
    )
    harness.managers.append(manager)
    await manager.start()
    return manager


async def test_over_the_cap_schemas_wait_for_a_request_and_then_match_an_eager_build(harness: Harness) -> None:
    eager = {s.name: s for s in (await _manager(harness, 128)).list_tools()}
    manager = await _manager(harness, 2)
    deferred = {s.name: s for s in manager.list_tools()}
    assert deferred.keys() == eager.keys() and len(deferred) > 2
    assert all(s.deferred and s.parameters == PLACEHOLDER for s in deferred.values())
    assert not any(s.deferred for s in eager.values())
    for name, spec in deferred.items():
        assert spec.definition_hash == eager[name].definition_hash, "approvals would not carry over"
        done = manager.complete(spec)
        assert done == eager[name], name
        assert manager.complete(spec) is done, "a schema is made once, then kept"
    stats = deferred["mcp__feat__stats"]
    assert eager["mcp__feat__stats"].parameters["properties"]["values"]["type"] == "array"
    result = await manager.call_tool(stats, {"values": [1.0, 3.0]}, call_info())
    assert not result.is_error and '"mean":2.0' in json.dumps(result.structured).replace(" ", ""), result


@pytest.mark.timeout(90)
async def test_a_model_request_carries_each_tool_with_its_sanitised_schema(
    home: Path, script: Callable[..., str]  # noqa: F811
) -> None:
    called = {"tool_calls": [{"name": "mcp__feat__stats", "arguments": {"values": [1.0, 3.0]}}]}
    config = Config(home=str(home), model=script(called, {"text": "ok"}), max_model_tools=2)
    servers = {"feat": server_cfg("features.py")}
    async with Session(config=config, mcp_servers=servers, thread_name="deferred") as session:
        await session._servers.ready()
        assert any(s.deferred for s in session._tools())
        assert not any(s.deferred for s in session._tools(complete=True))
        result = await asyncio.wait_for(session.run("hello"), 60)
        assert result.status == "completed"
        request = session._inspector.last_request(session._thread.id)
        assert request is not None
        sent = {tool["name"]: tool for tool in request.tools}
    assert set(sent) == {"search_tools", "mcp__feat__stats"}, "the called tool is in view, the others are not"
    stats = sent["mcp__feat__stats"]
    assert stats["parameters"]["properties"]["values"]["type"] == "array", stats


def test_a_completed_spec_follows_its_server_s_new_config() -> None:
    """A config change keeps the definition (same hash) but not the mode: the request's spec is
    the new one's, never the completion kept from before."""
    import mcp_types as types

    from nbagent.config import McpServerConfig
    from nbagent.mcp.catalog import CatalogBuilder, Completer

    tools = [types.Tool(name="t", description="d", input_schema={"type": "object", "properties": {"a": {"type": "string"}}})]
    builder, completer = CatalogBuilder(), Completer()
    [first], _ = builder.build({"s": ("k1", McpServerConfig(command="x"), tools)}, defer=True)
    assert completer.complete(first).approval_mode == "auto"
    prompting = McpServerConfig(command="x", default_tools_approval_mode="prompt")
    [second], _ = builder.build({"s": ("k2", prompting, tools)}, defer=True)
    completer.retain([second])
    assert second.definition_hash == first.definition_hash
    done = completer.complete(second)
    assert done.approval_mode == "prompt" and done.parameters["properties"]["a"] == {"type": "string"}
