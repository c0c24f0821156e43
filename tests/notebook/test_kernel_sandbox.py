"""``%%agent --sandbox MODE`` in a real kernel: that turn's ``shell`` commands run in that sandbox
and the model is told so, the next turn is back in the session's; ``%agent`` names each sandbox."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from nbagent.config import requirements as req
from nbagent.config.requirements import RequirementError
from nbagent.notebook.agent import KernelAgent
from tests.notebook.harness import SERVERS, Kernel, call, outputs_of, script

WRITE = ["sh", "-c", "echo hi > made.txt"]


def _shell_description(kernel: Kernel) -> str:
    _, out = kernel.run("%agent inspect request --json")
    [shell] = [t for t in json.loads(out)["tools"] if t["name"] == "shell"]
    return str(shell["description"])


def test_a_cells_sandbox_holds_for_its_turn_only_and_status_names_each_sandbox(tmp_path: Path) -> None:
    home = tmp_path / "home"
    replay = script(tmp_path / "replay.json", call("shell", command=WRITE), {"text": "Tried."},
                    call("shell", command=WRITE), {"text": "Wrote it."})  # fmt: skip
    (tmp_path / "nbagent.toml").write_text(
        f'model = "replay:{replay}"\napproval_policy = "on-request"\n'
        f"[mcp_servers.echo]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(SERVERS / 'echo.py'))}]\n"
    )
    kernel = Kernel(tmp_path, env={"NBAGENT_HOME": str(home)})
    try:
        kernel.run("%load_ext nbagent")
        _, out = kernel.run("%%agent --wait --policy never --sandbox read-only\nwrite made.txt", ui=False, timeout=120)
        assert "sandbox read-only for this turn's shell commands" in out
        assert not (tmp_path / "made.txt").exists()
        assert "Exit code: 0" not in outputs_of(kernel)[-1]["output"]
        assert "runs in the sandbox (read-only)" in _shell_description(kernel)

        kernel.run("%%agent --wait --policy never\nwrite made.txt again", ui=False, timeout=120)
        assert (tmp_path / "made.txt").read_text() == "hi\n"
        assert "runs in the sandbox (workspace-write)" in _shell_description(kernel)

        _, status = kernel.run("%agent")
        assert "sandbox:  shell workspace-write, network off" in status
        assert "sandbox:  echo workspace-write, network off" in status
    finally:
        kernel.close()


async def test_a_cells_sandbox_outside_the_requirements_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--sandbox`` is a choice for this turn: the administrator's ``allowed_sandbox_modes`` holds it."""
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / req.REQUIREMENTS_FILE).write_text('allowed_sandbox_modes = ["read-only", "workspace-write"]\n')
    monkeypatch.setattr(req, "SEARCH_PATH", (etc,))
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    agent = KernelAgent(shell=None)
    await agent.ready()
    try:
        with pytest.raises(RequirementError, match="sandbox_mode = 'danger-full-access' is not allowed"):
            agent.turn_sandbox("danger-full-access")
        policy = agent.turn_sandbox("read-only")
        assert policy is not None and policy.sandbox_mode == "read-only"
    finally:
        await agent.close()
