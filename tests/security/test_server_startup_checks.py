"""``nbagent mcp-server`` refuses settings it could not serve with before it serves: one line
naming the key, the folder or the flag, a non-zero exit, and never "listening"; so does
``nbagent -C`` with a folder that is not there."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.proc import nbagent, one_line_error

HELLO = "replay:tests/fixtures/replay_hello.json"
ROOT = Path(__file__).resolve().parents[2]


def mcp_server(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real server with no client (stdin closed), in a clean environment."""
    env = {"NBAGENT_HOME": str(tmp_path / "home"), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin",
           "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "nbagent.cli", "mcp-server", *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=30, env=env, cwd=tmp_path)


BAD_SETTINGS = [
    (("-c", 'approval_policy="yolo"'), "approval_policy"),
    (("-c", "bogus=1"), "bogus"),
    (("-c", "max_tool_rounds=abc"), "max_tool_rounds"),
    (("--cwd", "/nonexistent"), "/nonexistent"),
]


@pytest.mark.parametrize("transport", [(), ("--http", "127.0.0.1:0")], ids=["stdio", "http"])
@pytest.mark.parametrize(("args", "named"), BAD_SETTINGS, ids=[named for _, named in BAD_SETTINGS])
def test_mcp_server_refuses_bad_settings_before_serving(
    tmp_path: Path, transport: tuple[str, ...], args: tuple[str, ...], named: str
) -> None:
    line = one_line_error(mcp_server(tmp_path, *transport, *args))
    assert named in line and "listening" not in line


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf"])
def test_mcp_server_park_timeout_must_be_a_positive_number(tmp_path: Path, value: str) -> None:
    line = one_line_error(mcp_server(tmp_path, "--park-timeout", value))
    assert "--park-timeout" in line and value in line


def test_cli_working_folder_that_is_not_there_is_one_line_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nonexistent"
    line = one_line_error(nbagent("-C", str(missing), "run", "-m", HELLO, "hi", home=tmp_path / "home"))
    assert str(missing) in line
    assert not (tmp_path / "home" / "threads").exists() or not any((tmp_path / "home" / "threads").iterdir())
