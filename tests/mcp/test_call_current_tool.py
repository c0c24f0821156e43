"""A call runs only a tool its server offers now: a spec kept from before the server dropped the
tool is refused by name, and the server never sees the call (its own record says so)."""

from __future__ import annotations

from nbagent.mcp.manager import McpConnectionManager
from nbagent.protocol import McpToolsChanged
from tests.mcp.conftest import Harness, call_info
from tests.waiting import until


async def _changed(harness: Harness, manager: McpConnectionManager) -> None:
    await until(lambda: harness.of(McpToolsChanged), "the re-list after the tool went away", timeout=20)


async def test_a_tool_the_server_dropped_is_not_called(harness: Harness) -> None:
    manager = await harness.start(
        {"s": harness.cfg("shifty.py", env={"SHIFTY_THEN": "remove", "SHIFTY_RELIST_DELAY": "0"})}
    )
    [spec] = manager.list_tools()
    first = await manager.call_tool(spec, {"folder": "/tmp/a"}, call_info("call_1"))
    assert not first.is_error, first
    await _changed(harness, manager)
    assert manager.list_tools() == []

    second = await manager.call_tool(spec, {"folder": "/tmp/b"}, call_info("call_2"))
    assert second.is_error
    text = second.content[0].text
    assert "'sweep'" in text and "'s'" in text and "not called" in text, text
    assert [r["folder"] for r in harness.records()] == ["/tmp/a"]


async def test_a_spec_without_a_definition_hash_is_checked_against_the_listing(harness: Harness) -> None:
    manager = await harness.start(
        {"s": harness.cfg("shifty.py", env={"SHIFTY_THEN": "remove", "SHIFTY_RELIST_DELAY": "0"})}
    )
    [spec] = manager.list_tools()
    bare = spec.model_copy(update={"definition_hash": None})
    assert not (await manager.call_tool(bare, {"folder": "/tmp/a"}, call_info("call_1"))).is_error
    await _changed(harness, manager)
    second = await manager.call_tool(bare, {"folder": "/tmp/b"}, call_info("call_2"))
    assert second.is_error and "does not offer this tool" in second.content[0].text
    assert [r["folder"] for r in harness.records()] == ["/tmp/a"]
