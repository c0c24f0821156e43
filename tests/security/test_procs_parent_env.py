"""A stdio server can read its parent's environment (``/proc/$PPID/environ``): by default that
parent is nbagent's launcher, whose environment is the server's own, so the key the CLI or the
kernel holds is not there. What the launcher does not hide is stated in docs/security.md and
measured by bench/launcher.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.conftest import records
from tests.security.procs import replay, tool_call, write_project
from tests.trusting import clean_environ

CANARY = "sk-canary-" + os.urandom(8).hex()

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")


def _ancestors(tmp_path: Path, env_clear_parent: bool | None) -> list[dict[str, Any]]:
    """What the server saw walking up from its parent, run under ``nbagent run`` holding the canary."""
    record = tmp_path / "records.jsonl"
    work = tmp_path / "work"
    # The launcher as the server's visible parent is the unsandboxed path: in the sandbox the
    # server sees no process outside its own PID namespace (tests/security/test_sandbox_matrix.py).
    write_project(work, record, env_clear_parent=env_clear_parent, sandbox_mode="danger-full-access")
    model = replay(tmp_path / "script.json", tool_call("ancestors_env", name="OPENAI_API_KEY"), {"text": "done"})
    env = clean_environ()
    env |= {"NBAGENT_HOME": str(tmp_path / "home"), "OPENAI_API_KEY": CANARY}
    proc = subprocess.run(
        [sys.executable, "-m", "nbagent.cli", "run", "-m", model, "--policy", "full-auto", "--json", "look"],
        cwd=work, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert CANARY not in proc.stdout  # the probe reports presence, never the value
    return next(r for r in records(record) if r["tool"] == "ancestors_env")["ancestors"]


def test_the_parent_a_server_can_read_holds_no_secret(tmp_path: Path) -> None:
    ancestors = _ancestors(tmp_path, env_clear_parent=None)
    parent = ancestors[0]
    assert parent["has"] is False, json.dumps(ancestors, indent=1)
    assert parent["readable"] and "launcher.py" in parent["cmd"]


def test_without_the_launcher_the_parent_is_the_cli_and_holds_the_key(tmp_path: Path) -> None:
    """The control: the probe does find the key where it is, so the test above is not vacuous."""
    ancestors = _ancestors(tmp_path, env_clear_parent=False)
    assert "nbagent.cli" in ancestors[0]["cmd"] and ancestors[0]["has"] is True
