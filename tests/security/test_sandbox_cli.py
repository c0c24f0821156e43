"""The sandbox from the command line: ``--sandbox MODE`` on ``nbagent run`` decides what a
server may do, and ``nbagent mcp list`` shows each server's sandbox."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nbagent.sandbox import available
from tests.mcp.conftest import SERVERS
from tests.trusting import clean_environ

pytestmark = pytest.mark.skipif(bool(available()), reason=f"no sandbox here: {available()}")


def _project(tmp_path: Path, extra: str = "") -> tuple[Path, dict[str, str]]:
    work = tmp_path / "work"
    work.mkdir()
    (work / "nbagent.toml").write_text(
        f"[mcp_servers.probe]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(SERVERS / 'probe.py'))}]\n"
        + extra
    )
    return work, clean_environ() | {"NBAGENT_HOME": str(tmp_path / "home")}


def _nbagent(work: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nbagent.cli", *args], cwd=work, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(("mode", "written"), [("read-only", False), ("workspace-write", True)])
def test_run_sandbox_decides_what_a_server_may_write(tmp_path: Path, mode: str, written: bool) -> None:
    work, env = _project(tmp_path)
    target = work / "notes.txt"
    script = tmp_path / "script.json"
    call = {"name": "mcp__probe__write_file", "arguments": {"path": str(target)}}
    script.write_text(json.dumps({"responses": [{"tool_calls": [call]}, {"text": "done"}]}))
    proc = _nbagent(work, env, "run", "-m", f"replay:{script}", "--policy", "full-auto", "--sandbox", mode, "--json", "go")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert target.exists() is written, proc.stdout


def test_mcp_list_shows_each_servers_sandbox(tmp_path: Path) -> None:
    work, env = _project(tmp_path, 'sandbox_mode = "read-only"\n[mcp_servers.web]\nurl = "http://127.0.0.1:9/mcp"\n')
    text = _nbagent(work, env, "mcp", "list").stdout
    assert [line.split()[4] for line in text.splitlines()[1:]] == ["read-only", "-"], text
    rows = json.loads(_nbagent(work, env, "mcp", "list", "--json").stdout)
    assert {row["name"]: row["sandbox"] for row in rows} == {"probe": "read-only", "web": "-"}


def test_inspect_tools_shows_the_sandbox_of_each_tools_server(tmp_path: Path) -> None:
    work, env = _project(tmp_path, 'sandbox_mode = "read-only"\n')
    text = _nbagent(work, env, "inspect", "tools").stdout
    block = text.split("mcp__probe__write_file  <- probe/write_file")[1]
    assert block.splitlines()[1] == "  sandbox: read-only", text
