"""Shared by the untrusted-text and untrusted-input tests: the hostile text server, a replay
script, and a child-process runner (a frozen event loop must fail a test, not hang it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.mcp.conftest import server_cfg

REPO = Path(__file__).resolve().parents[2]
BACKTRACKS = "a" * 64 + "!"
"""Against ``^(a+)+$`` this takes ~2**64 steps: whoever runs the server's pattern never returns."""


def hostile_text_server(record: Path) -> Any:
    """The hostile server in its text set, over the legacy protocol (its questions are pushed)."""
    return server_cfg("hostile.py", record, env={"HOSTILE_SET": "text"}, protocol="legacy")


def replay(path: Path, *responses: dict[str, Any]) -> str:
    path.write_text(json.dumps({"responses": list(responses)}))
    return f"replay:{path}"


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


def run_child(code: str, tmp_path: Path, timeout: float = 150) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter (repo importable, its own ``$NBAGENT_HOME``); it prints
    one JSON line last. A child that does not finish means its event loop froze."""
    work = tmp_path / "child"
    work.mkdir(exist_ok=True)
    env = dict(os.environ, NBAGENT_HOME=str(tmp_path / "home"), PYTHONPATH=str(REPO))
    for key in ("NBAGENT_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        env.pop(key, None)
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("the event loop froze: the child never finished") from None
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
