"""Helpers for the process tests: the leaving-behind server, its config, and what outlived it."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.mcp.conftest import SERVERS, alive, records

SPAWNER = SERVERS / "spawner.py"
LEFT_BEHIND = ("server", "child", "setsid", "daemon", "daemon_clean_env")
"""What ``spawn_all`` reports: the server and the four processes it tries to leave behind."""


def survivors(pids: dict[str, int], within: float = 10.0) -> dict[str, int]:
    """The named processes still running once ``within`` seconds have passed (SIGKILL is asynchronous)."""
    deadline = time.monotonic() + within
    while (left := {name: pid for name, pid in pids.items() if alive(pid)}) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def kill_leftovers(pids: Iterable[int]) -> None:
    """Test hygiene only: a failing run must not leave its processes on the machine."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def spawned(record: Path) -> dict[str, int]:
    """The pids ``spawn_all`` recorded."""
    entry = next(r for r in records(record) if r["tool"] == "spawn_all")
    return {name: entry[name] for name in LEFT_BEHIND}


def write_project(
    work: Path, record: Path, *, env_clear_parent: bool | None = None, sandbox_mode: str | None = None
) -> None:
    """``nbagent.toml`` with the spawner as server ``procs``, its record file's folder writable."""
    work.mkdir(parents=True, exist_ok=True)
    lines = [
        "[mcp_servers.procs]",
        f"command = {json.dumps(sys.executable)}",
        f"args = [{json.dumps(str(SPAWNER))}]",
        f"env = {{ RECORD_FILE = {json.dumps(str(record))} }}",
        f"sandbox_workspace_write = {{ writable_roots = [{json.dumps(str(record.parent))}] }}",
    ]
    if env_clear_parent is not None:
        lines.append(f"env_clear_parent = {str(env_clear_parent).lower()}")
    if sandbox_mode is not None:
        lines.append(f"sandbox_mode = {json.dumps(sandbox_mode)}")
    (work / "nbagent.toml").write_text("\n".join(lines) + "\n")


def replay(path: Path, *responses: dict[str, Any]) -> str:
    path.write_text(json.dumps({"responses": list(responses)}))
    return f"replay:{path}"


def tool_call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": f"mcp__procs__{tool}", "arguments": arguments}]}
