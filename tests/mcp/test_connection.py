"""One connection at a time: environment, protocol generations, startup failures, HTTP + bearer."""

from __future__ import annotations

import json
import sys
import time

import pytest

from nbagent.config import McpServerConfig
from nbagent.mcp.env import ALLOWED_VARS, missing_env_vars, server_env
from nbagent.mcp.proctree import MARKER_VAR
from nbagent.protocol import McpStartupUpdate, TextBlock

from .conftest import Harness, HttpServer, alive, call_info, records, server_cfg


def _text(result) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextBlock))


def test_server_env_is_cleared() -> None:
    cfg = McpServerConfig(command="x", env={"LOG_LEVEL": "info"}, env_vars=["PASSED", "ABSENT"])
    environ = {"PATH": "/bin", "HOME": "/h", "OPENAI_API_KEY": "sk-secret", "PASSED": "1", "AWS_SECRET": "s"}
    env = server_env(cfg, environ)
    assert env == {"PATH": "/bin", "HOME": "/h", "PASSED": "1", "LOG_LEVEL": "info"}
    assert missing_env_vars(cfg, environ) == ["ABSENT"]
    assert set(ALLOWED_VARS) >= {"HOME", "PATH", "LANG", "TZ"}


@pytest.mark.parametrize("protocol", ["legacy", "auto"])
async def test_env_reaches_server_without_secrets(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, protocol: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("NBAGENT_TEST_PASSED", "yes")
    cfg = harness.cfg("features.py", env={"FROM_TABLE": "1"}, env_vars=["NBAGENT_TEST_PASSED"], protocol=protocol)
    manager = await harness.start({"feat": cfg})
    spec = next(s for s in manager.list_tools() if s.raw_name == "env_keys")
    result = await manager.call_tool(spec, {}, call_info())
    assert not result.is_error, result
    keys = set(result.structured["result"]) if isinstance(result.structured, dict) else set(json.loads(_text(result)))
    assert "OPENAI_API_KEY" not in keys
    assert {"FROM_TABLE", "NBAGENT_TEST_PASSED", "RECORD_FILE", "PATH"} <= keys
    assert keys <= set(ALLOWED_VARS) | {"FROM_TABLE", "NBAGENT_TEST_PASSED", "RECORD_FILE", "LC_CTYPE", MARKER_VAR}


@pytest.mark.parametrize(
    ("protocol", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28"), ("2026-07-28", "2026-07-28")]
)
async def test_protocol_generations(harness: Harness, protocol: str, version: str) -> None:
    manager = await harness.start({"feat": harness.cfg("features.py", protocol=protocol)})
    status = manager.status()["feat"]
    assert status.state == "ready" and status.protocol_version == version
    assert "Feature test server" in manager.instructions()["feat"]
    ready = [e for e in harness.of(McpStartupUpdate) if e.status == "ready"]
    assert ready[0].protocol_version == version and ready[0].tools == status.tools > 0


async def test_failing_server_reports_stderr_tail(harness: Harness) -> None:
    cfg = harness.cfg("slow_start.py", env={"SLOW_START_SEC": "0", "SLOW_START_FAIL": "no database"})
    manager = await harness.start({"bad": cfg})
    failed = [e for e in harness.of(McpStartupUpdate) if e.status == "failed"]
    assert len(failed) == 1
    assert "bad" in (failed[0].error or "")
    assert "failing on purpose: no database" in (failed[0].stderr_tail or "")
    assert manager.status()["bad"].state == "failed"
    assert manager.list_tools() == []


async def test_missing_command_is_a_clear_error(harness: Harness) -> None:
    cfg = McpServerConfig(command="/nonexistent/nbagent-no-such-server")
    await harness.start({"ghost": cfg})
    failed = [e for e in harness.of(McpStartupUpdate) if e.status == "failed"]
    assert failed and "ghost" in failed[0].error and "nonexistent" in failed[0].error


async def test_startup_timeout_kills_the_server(harness: Harness) -> None:
    cfg = harness.cfg("slow_start.py", env={"SLOW_START_SEC": "30"}, startup_timeout_sec=0.7)
    t0 = time.monotonic()
    manager = await harness.start({"slow": cfg})
    elapsed = time.monotonic() - t0
    assert elapsed < 5, elapsed
    status = manager.status()["slow"]
    assert status.state == "failed" and "did not start within 0.7 s" in (status.error or "")
    assert "sleeping 30" in (status.stderr_tail or "")
    assert status.pid is not None and not alive(status.pid)


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_http_with_bearer_token(harness: Harness, request, transport: str, monkeypatch) -> None:
    http_server: HttpServer = request.getfixturevalue("sse_server" if transport == "sse" else "http_server")
    monkeypatch.setenv("NBAGENT_TEST_TOKEN", http_server.token)
    cfg = McpServerConfig(url=http_server.url, transport=transport, bearer_token_env_var="NBAGENT_TEST_TOKEN")
    manager = await harness.start({"web": cfg})
    assert manager.status()["web"].state == "ready", manager.status()
    spec = next(s for s in manager.list_tools() if s.raw_name == "add")
    assert spec.name == "mcp__web__add"
    result = await manager.call_tool(spec, {"a": 2, "b": 40}, call_info())
    assert not result.is_error and "42" in _text(result)
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    work = next(s for s in manager.list_tools() if s.raw_name == "work")
    result = await manager.call_tool(work, {"steps": 3}, call_info("call_2"), on_progress)
    assert not result.is_error and progress == [1, 2, 3]
    assert [r["tool"] for r in records(http_server.record)] == ["add", "work"]


async def test_http_wrong_token_fails_clearly(harness: Harness, http_server: HttpServer, monkeypatch) -> None:
    monkeypatch.setenv("NBAGENT_TEST_TOKEN", "wrong-token")
    cfg = McpServerConfig(url=http_server.url, bearer_token_env_var="NBAGENT_TEST_TOKEN", startup_timeout_sec=10)
    manager = await harness.start({"web": cfg})
    status = manager.status()["web"]
    assert status.state == "failed"
    assert "web" in status.error and "wrong-token" not in status.error
    assert records(http_server.record) == []


async def test_http_token_variable_unset(harness: Harness, http_server: HttpServer, monkeypatch) -> None:
    monkeypatch.delenv("NBAGENT_TEST_TOKEN", raising=False)
    cfg = McpServerConfig(url=http_server.url, bearer_token_env_var="NBAGENT_TEST_TOKEN")
    manager = await harness.start({"web": cfg})
    assert "NBAGENT_TEST_TOKEN is not set" in (manager.status()["web"].error or "")


async def test_http_legacy_protocol(harness: Harness, http_server: HttpServer) -> None:
    cfg = McpServerConfig(url=http_server.url, http_headers={"Authorization": f"Bearer {http_server.token}"},
                          protocol="legacy")  # fmt: skip
    manager = await harness.start({"web": cfg})
    assert manager.status()["web"].protocol_version == "2025-11-25"
    spec = next(s for s in manager.list_tools() if s.raw_name == "add")
    assert "5" in _text(await manager.call_tool(spec, {"a": 2, "b": 3}, call_info()))


def test_server_cfg_uses_this_interpreter() -> None:
    assert server_cfg("crashy.py").command == sys.executable


async def test_a_large_result_arrives_whole(harness: Harness) -> None:
    """A 40 MB answer is one JSON-RPC line; its read time is measured in bench/mcp_stdio.py."""
    from nbagent.protocol import TextBlock

    manager = await harness.start({"bulky": harness.cfg("bulky.py", tool_timeout_sec=60)})
    spec = next(s for s in manager.list_tools() if s.raw_name == "bulk")
    result = await manager.call_tool(spec, {"mb": 40}, call_info())
    assert not result.is_error, result
    assert sum(len(b.text) for b in result.content if isinstance(b, TextBlock)) == 40 * 1024 * 1024


async def test_a_line_over_the_cap_disconnects_the_server_not_the_session(harness: Harness, monkeypatch) -> None:
    from nbagent.mcp import stdio

    monkeypatch.setattr(stdio, "MAX_LINE_BYTES", 1024 * 1024)
    manager = await harness.start({"bulky": harness.cfg("bulky.py", tool_timeout_sec=30)})
    spec = next(s for s in manager.list_tools() if s.raw_name == "bulk")
    result = await manager.call_tool(spec, {"mb": 4}, call_info())
    assert result.is_error and "bulky" in _text(result)
