"""Every listing of tools says what a call will do under the policy in force ("runs", "asks",
"declined"), as ``inspect tools`` does, never only the configured mode: ``auto`` is what a
destructive tool and ``run_python`` are set to, yet under ``on-request`` both ask."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nbagent.core.session import Session
from nbagent.notebook.agent import KernelAgent
from nbagent.notebook.commands import run_line
from nbagent.tools.python import PythonTools
from tests.cli.proc import SERVERS, nbagent, stdio_server
from tests.mcp.conftest import server_cfg

EXPECTED = {  # policy -> what a call of each tool of the trusted ``feat`` server does
    "on-request": {"read_note": "runs", "delete_note": "asks"},
    "never": {"read_note": "runs", "delete_note": "declined"},
}


@pytest.mark.parametrize("policy", ["on-request", "never"])
def test_nbagent_tools_shows_what_a_call_does_under_the_configured_policy(tmp_path: Path, policy: str) -> None:
    project = tmp_path / "project"
    project.mkdir()
    feat = stdio_server("feat", SERVERS / "features.py", startup_timeout_sec=30) + "trusted = true\n"
    (project / "nbagent.toml").write_text(f'approval_policy = "{policy}"\n' + feat, encoding="utf-8")
    home = tmp_path / "home"

    listed = nbagent("-C", str(project), "tools", "--json", home=home)
    assert listed.returncode == 0, listed.stderr
    document = json.loads(listed.stdout)
    rows = {row["raw_tool"]: row for row in document["tools"]}
    assert document["policy"] == policy
    for tool, effect in EXPECTED[policy].items():
        assert (rows[tool]["approval"], rows[tool]["approval_mode"]) == (effect, "auto"), rows[tool]
    assert "destructive" in rows["delete_note"]["approval_why"]

    table = nbagent("-C", str(project), "tools", home=home)
    assert table.returncode == 0, table.stderr
    assert f"APPROVAL: what a call does under policy '{policy}'" in table.stdout, table.stdout
    shown = {line.split()[0].removeprefix("mcp__feat__"): line.split()[2] for line in table.stdout.splitlines()
             if line.startswith("mcp__feat__")}  # fmt: skip
    assert {tool: shown[tool] for tool in EXPECTED[policy]} == EXPECTED[policy]


@pytest.mark.timeout(60)
async def test_agent_mcp_shows_what_a_call_does_under_the_sessions_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``run_python`` and the destructive tool ask under ``on-request``; the trusted read-only
    one runs; after "for this session" is remembered, a listing says the tool runs."""
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)

    def session() -> Session:
        made = Session(policy="on-request", mcp_servers={"feat": server_cfg("features.py", trusted=True)})
        made.add_provider(PythonTools(namespace={}))
        return made

    agent = KernelAgent(shell=None, session_factory=session)
    try:
        s = await agent.ready()
        await s._servers.ready()
        capsys.readouterr()
        run_line(agent, "mcp")
        out = capsys.readouterr().out
        lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
        assert "approval asks" in lines["run_python"], out
        assert "approval asks" in lines["mcp__feat__delete_note"], out
        assert "approval runs" in lines["mcp__feat__read_note"], out
        assert "approval auto" not in out
        s._approvals.memory.remember(next(t for t in s._tools() if t.name == "mcp__feat__delete_note"))
        run_line(agent, "mcp")
        assert "approval runs" in next(line for line in capsys.readouterr().out.splitlines() if "delete_note" in line)
    finally:
        await agent.close()
