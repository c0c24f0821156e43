"""Run the real ``nbagent`` command in a subprocess, as a person at a shell does."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.trusting import clean_environ

ROOT = Path(__file__).resolve().parents[2]
SERVERS = ROOT / "tests" / "servers"
WITHOUT_PRIVILEGE = ["setpriv", "--bounding-set=-all", "--inh-caps=-all"]
"""Root without capabilities: file modes bind it as they bind any user."""


def nbagent(
    *args: str,
    home: Path | str,
    cwd: Path | None = None,
    timeout: float = 60,
    env: dict[str, str] | None = None,
    unprivileged: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``nbagent ARGS`` with a clean environment (no API key, no model) and ``$NBAGENT_HOME``;
    ``unprivileged``: as root with every capability dropped (so a read-only folder is one)."""
    prefix = WITHOUT_PRIVILEGE if unprivileged and os.geteuid() == 0 else []
    return subprocess.run(
        [*prefix, sys.executable, "-m", "nbagent.cli", *args],
        capture_output=True, text=True, timeout=timeout, env=_clean(home, env), cwd=cwd or ROOT,
    )  # fmt: skip


def start_nbagent(
    *args: str, home: Path | str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """``nbagent ARGS`` running, for a test to read its output as it comes and answer it."""
    return subprocess.Popen(
        [sys.executable, "-m", "nbagent.cli", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_clean(home, env), cwd=cwd or ROOT,
    )  # fmt: skip


def _clean(home: Path | str, env: dict[str, str] | None) -> dict[str, str]:
    clean = clean_environ()
    clean["NBAGENT_HOME"] = str(home)
    clean.update(env or {})
    return clean


def can_drop_privilege() -> bool:
    return os.geteuid() != 0 or shutil.which(WITHOUT_PRIVILEGE[0]) is not None


def events_of(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a command that refused its input (and the proof it was one)."""
    assert proc.returncode != 0, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def stdio_server(name: str, script: Path, *args: str, **keys: object) -> str:
    """One ``[mcp_servers.NAME]`` table starting ``script`` with this Python."""
    table = f"[mcp_servers.{name}]\ncommand = {json.dumps(sys.executable)}\n"
    table += f"args = {json.dumps([str(script), *args])}\n"
    for key, value in keys.items():
        table += f"{key} = {json.dumps(value)}\n"
    return table


def demo_server(name: str, notes: Path, **keys: object) -> str:
    """The quickstart's notes server (read-only, destructive and eliciting tools); its notes
    folder, outside the workspace, is made and given as a writable root of its sandbox."""
    notes.mkdir(parents=True, exist_ok=True)
    script = ROOT / "nbagent" / "examples" / "demo_server.py"
    table = stdio_server(name, script, "--dir", str(notes), "--record", str(notes / "record.jsonl"), **keys)
    return table + f"sandbox_workspace_write = {{ writable_roots = [{json.dumps(str(notes))}] }}\n"


def failing_server(name: str, reason: str, **keys: object) -> str:
    """A server that exits during startup saying why on stderr."""
    table = stdio_server(name, SERVERS / "slow_start.py", **keys)
    return table + f"env = {{ SLOW_START_SEC = \"0\", SLOW_START_FAIL = {json.dumps(reason)} }}\n"
