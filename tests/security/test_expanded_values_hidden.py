"""A value ``.mcp.json`` takes from the environment (``${VAR}``) is shown as the reference it is
written as, wherever nbagent shows a server: ``nbagent mcp get``, ``list``, their ``--json``,
``%agent mcp`` and ``nbagent inspect wire``. Only the server is handed the value."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from nbagent.notebook.agent import KernelAgent
from nbagent.notebook.commands import run_line
from tests.cli.proc import SERVERS, nbagent

DB_URL = "postgres://app:s3cret-pw-4471@db.internal/app"
HOST_KEY = "hostkey-9f3a7c21"
VALUES = {"DB_URL": DB_URL, "HOST_KEY": HOST_KEY}
LEAKY = (
    "import os, runpy, sys; os.environ['LEAKY_SETTING'] = sys.argv[1]; "
    "runpy.run_path(sys.argv[2], run_name='__main__')"
)
"""The leaky server, handed its setting as an argument: it repeats it in its instructions."""


def _folder(tmp_path: Path) -> Path:
    servers = {
        "db": {"command": sys.executable, "args": ["-c", LEAKY, "--db=${DB_URL}", str(SERVERS / "leaky.py")]},
        "web": {"type": "http", "url": "https://${HOST_KEY}.example.invalid/mcp"},
    }  # fmt: skip
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return tmp_path


VIEWS = [["get", "db"], ["get", "db", "--json"], ["get", "web"], ["get", "web", "--json"], ["list"], ["list", "--json"]]


@pytest.mark.parametrize("argv", VIEWS, ids=" ".join)
def test_nbagent_mcp_shows_the_reference_not_the_value(tmp_path: Path, argv: list[str]) -> None:
    proc = nbagent("mcp", *argv, home=tmp_path / "home", cwd=_folder(tmp_path), env=VALUES)
    assert proc.returncode == 0, proc.stderr
    shown = proc.stdout + proc.stderr
    assert DB_URL not in shown and "s3cret-pw" not in shown and HOST_KEY not in shown, shown
    assert "${DB_URL}" in shown or "${HOST_KEY}" in shown


def test_agent_mcp_in_a_notebook_shows_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(_folder(tmp_path))
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    for name, value in VALUES.items():
        monkeypatch.setenv(name, value)
    agent = KernelAgent(shell=None)
    for line in ("mcp get db", "mcp get web --json", "mcp list", "mcp list --json"):
        run_line(agent, line)
        shown = capsys.readouterr().out
        assert DB_URL not in shown and HOST_KEY not in shown, (line, shown)
        assert "${DB_URL}" in shown or "${HOST_KEY}" in shown, (line, shown)


def test_inspect_wire_hides_a_value_a_server_repeats_from_its_arguments(tmp_path: Path) -> None:
    proc = nbagent("inspect", "wire", "db", "--json", home=tmp_path / "home", cwd=_folder(tmp_path), env=VALUES)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    instructions = json.dumps(json.loads(proc.stdout)["messages"])
    assert "my setting is" in instructions  # the server did repeat it
    assert "s3cret-pw" not in instructions and DB_URL not in instructions
