"""After ``aclose()`` no process started for an MCP server is alive: servers, their children,
servers still starting, crashed servers and servers in the middle of a call."""

from __future__ import annotations

import asyncio
import time

import pytest

from nbagent.mcp.manager import McpConnectionManager
from nbagent.sandbox import SandboxMode
from tests.waiting import until

from .conftest import Harness, alive, call_info, host_pids


def _spec(manager, raw: str):
    return next(s for s in manager.list_tools() if s.raw_name == raw)


@pytest.mark.parametrize("sandbox", ["danger-full-access", "workspace-write"])
async def test_no_child_alive_after_aclose(harness: Harness, sandbox: SandboxMode) -> None:
    """Without the sandbox nbagent finds the tree by pid; in it, killing the PID namespace's
    process 1 takes everything (the grandchild reports its pid inside the namespace)."""
    servers = {
        "a": harness.cfg("crashy.py", sandbox_mode=sandbox),
        "b": harness.cfg("features.py", protocol="legacy", sandbox_mode=sandbox),
        "c": harness.cfg("elicit_resolve.py", sandbox_mode=sandbox),
        "starting": harness.cfg("slow_start.py", env={"SLOW_START_SEC": "60"}, startup_timeout_sec=30,
                                sandbox_mode=sandbox),
    }
    manager = McpConnectionManager(servers, harness.events.append, harness.answers, harness.tmp / "logs")
    harness.managers.append(manager)
    start = asyncio.ensure_future(manager.start())
    # The "ready" event, not the connection's state: it is sent once the server's tools are listed.
    await until(lambda: sum(1 for e in harness.events if getattr(e, "status", None) == "ready") == 3,
                'the three quick servers to be ready, "starting" still sleeping', 30)
    grandchild = int(
        next(b.text for b in (await manager.call_tool(_spec(manager, "spawn_child"), {}, call_info())).content)
    )
    if sandbox != "danger-full-access":
        grandchild = host_pids(manager.status()["a"].pid, {"grandchild": grandchild})["grandchild"]
    in_flight = asyncio.ensure_future(manager.call_tool(_spec(manager, "sleepy"), {"seconds": 60}, call_info("c2")))
    await until(lambda: any(r["tool"] == "sleepy" for r in harness.records()), "the call to be running in the server", 10)
    pids = manager.pids()
    assert len(pids) == 4 and all(alive(p) for p in pids) and alive(grandchild)
    t0 = time.monotonic()
    await manager.aclose()
    elapsed = time.monotonic() - t0
    assert elapsed < 10, elapsed
    assert [p for p in pids if alive(p)] == []
    await until(lambda: not alive(grandchild), "the grandchild to be gone (SIGKILL is asynchronous)", 2.0)
    result = await asyncio.wait_for(in_flight, 5)
    assert result.is_error  # the in-flight call ended as a failed result, not an exception
    await asyncio.wait_for(start, 5)


async def test_no_child_alive_after_crash_and_restart(harness: Harness) -> None:
    manager = await harness.start({"a": harness.cfg("crashy.py")})
    first = manager.status()["a"].pid
    await manager.call_tool(_spec(manager, "die"), {}, call_info())
    await manager.restart("a")
    second = manager.status()["a"].pid
    assert first != second and not alive(first) and alive(second)
    await manager.restart("a")
    third = manager.status()["a"].pid
    assert not alive(second)
    await manager.aclose()
    assert not any(alive(p) for p in (first, second, third))


async def test_aclose_is_idempotent_and_quick(harness: Harness) -> None:
    manager = await harness.start({"a": harness.cfg("crashy.py"), "b": harness.cfg("hostile.py")})
    pids = manager.pids()
    t0 = time.monotonic()
    await manager.aclose()
    await manager.aclose()
    assert time.monotonic() - t0 < 3
    assert not any(alive(p) for p in pids)
