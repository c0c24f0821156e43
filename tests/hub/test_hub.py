"""nbagent on a real JupyterHub: real Linux users, each with a server the hub spawns as that user,
one shared streamable-HTTP MCP server with a token per user, and an administrator's
requirements. Each user runs a notebook with a ``%%agent`` turn through the hub (the service
token, the proxy, the Jupyter server's REST API and the kernel's websocket, as JupyterLab talks
to it). Needs root (it adds users and runs the hub); CI runs as root.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hub.deploy import VENV, Cell, Hub, Kernel, run_as, start_hub, wait

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="a hub with real Linux users needs root (CI runs as root)"),
    pytest.mark.timeout(300),
]

USERS = ["nbh-alice", "nbh-bob", "nbh-carol"]
ALICE, BOB = USERS[0], USERS[1]


@dataclass
class UserRun:
    kernel: Kernel
    loaded: Cell
    status: Cell
    turn: Cell


@dataclass
class Deployment:
    hub: Hub
    runs: dict[str, UserRun]

    def home(self, user: str) -> Path:
        return Path(self.hub.users[user].pw_dir)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    hub = start_hub(tmp_path_factory.mktemp("hub"), USERS)
    try:
        hub.start_servers(USERS)
        cells = ["%load_ext nbagent", "%agent", "%%agent --wait\nWho does the team server say I am?"]
        ran = hub.run_cells_everywhere(cells)
        yield Deployment(hub, {user: UserRun(kernel, *cells) for user, (kernel, cells) in ran.items()})
    finally:
        hub.stop()


def audit_lines(home: Path) -> list[dict]:
    return [json.loads(line) for path in sorted((home / ".nbagent" / "audit").glob("*.jsonl"))
            for line in path.read_text().splitlines()]


def test_each_users_turn_runs_in_their_own_server_as_them(deployment: Deployment) -> None:
    for user, run in deployment.runs.items():
        assert run.loaded.error is None and run.turn.error is None, (user, run.loaded, run.turn)
        assert "[turn completed]" in run.turn.text, run.turn.text
        assert f"you are {user}" in run.turn.text, run.turn.text
        whoami = run.kernel.execute("import os, pwd; print(pwd.getpwuid(os.getuid()).pw_name, os.getcwd())")
        assert whoami.text.split() == [user, str(deployment.home(user))]


def test_the_requirements_hold_for_every_user_whatever_their_own_config_asks(deployment: Deployment) -> None:
    for run in deployment.runs.values():
        # Their own nbagent.toml asks for full-auto and danger-full-access: each falls back, named.
        assert "policy:   on-request" in run.status.text, run.status.text
        requirements = VENV / "etc" / "nbagent" / "requirements.toml"
        assert (f"approval_policy = 'full-auto' is not allowed by requirements: allowed_approval_policies in "
                f"{requirements}") in run.status.text
        assert f"sandbox_mode = 'danger-full-access' is not allowed by requirements: allowed_sandbox_modes in " \
               f"{requirements}" in run.status.text
        assert "policy on-request" in run.turn.text
        # Chosen for one turn, it is refused and nothing runs.
        refused = run.kernel.execute("%%agent --policy full-auto --wait\nWho am I?")
        assert "error (config): approval_policy = 'full-auto' is not allowed by requirements" in refused.text
        assert "EVERY tool call runs without asking" not in refused.text, refused.text  # no false alarm
    calls = [json.loads(line) for line in deployment.hub.record.read_text().splitlines()]
    assert len(calls) == len(USERS)


def test_the_shared_server_sees_each_users_own_identity(deployment: Deployment) -> None:
    calls = [json.loads(line) for line in deployment.hub.record.read_text().splitlines()]
    assert sorted(call["user"] for call in calls) == sorted(USERS)
    # Each token is in its own user's server only, and in no file nbagent wrote.
    for user, token in deployment.hub.user_tokens.items():
        env = deployment.runs[user].kernel.execute("import os; print(os.environ['TEAM_MCP_TOKEN'])")
        assert env.text.strip() == token
        for path in (deployment.home(user) / ".nbagent").rglob("*"):
            assert not path.is_file() or token.encode() not in path.read_bytes(), path


def test_the_audit_log_has_each_users_decisions(deployment: Deployment) -> None:
    for user in USERS:
        lines = audit_lines(deployment.home(user))
        decisions = [line for line in lines if line["event"] == "codex.tool_decision"]
        assert [(d["user"], d["server"], d["raw_tool"], d["decision"], d["by"], d["policy"]) for d in decisions] == [
            (user, "team", "whoami", "approve", "policy", "on-request")]
        results = [line for line in lines if line["event"] == "codex.tool_result"]
        assert [(r["user"], r["call_id"], r["success"]) for r in results] == [(user, decisions[0]["call_id"], True)]
        assert {line["uid"] for line in lines} == {deployment.hub.users[user].pw_uid}


def test_another_user_cannot_read_a_users_threads_tokens_or_audit_log(deployment: Deployment) -> None:
    home = deployment.home(ALICE) / ".nbagent"
    (thread,) = (home / "threads").glob("thread_*.jsonl")
    (audit,) = (home / "audit").glob("*.jsonl")
    kernel_pid = deployment.runs[ALICE].kernel.execute("import os; print(os.getpid())").text.strip()
    for path in [home, home / "threads", thread, home / "state.sqlite", audit, home / "config.toml",
                 Path(f"/proc/{kernel_pid}/environ"), deployment.hub.run_dir / "user-tokens.json"]:
        tried = run_as(BOB, "cat" if path.is_file() else "ls", str(path))
        assert tried.returncode != 0 and "Permission denied" in tried.stderr, (path, tried.stdout[:200])


def test_a_users_kernel_cannot_reach_another_users_kernel(deployment: Deployment) -> None:
    """Bob's kernel listens on 127.0.0.1, where Alice's kernel (and so her agent and its tools)
    can connect; without Bob's key, which is in his runtime folder she cannot read, what she
    sends is dropped as an invalid message and never runs."""
    bob_runtime = deployment.home(BOB) / ".local" / "share" / "jupyter" / "runtime"
    (connection,) = bob_runtime.glob("kernel-*.json")
    shell_port = json.loads(connection.read_text())["shell_port"]
    marker = deployment.home(BOB) / "reached-by-alice"
    marker.unlink(missing_ok=True)
    alice = deployment.runs[ALICE].kernel
    listed = alice.execute(f"import os\ntry:\n    os.listdir({str(bob_runtime)!r})\nexcept PermissionError as e:\n"
                           f"    print('denied', e.errno)")
    assert listed.text.strip() == "denied 13", listed
    before = deployment.hub.log.read_text(errors="replace").count("Invalid Signature")
    sent = alice.execute(
        "from jupyter_client import BlockingKernelClient\n"
        f"kc = BlockingKernelClient(ip='127.0.0.1', shell_port={shell_port}, key=os.urandom(32).hex().encode())\n"
        f"kc.start_channels(); kc.execute(\"open({str(marker)!r}, 'w').write('alice')\")\n"
        "print('sent')")
    assert sent.text.strip() == "sent", sent
    wait(lambda: deployment.hub.log.read_text(errors="replace").count("Invalid Signature") > before,
         "Bob's kernel to drop Alice's message", 30, deployment.hub.log)
    bob = deployment.runs[BOB].kernel.execute(f"import os; print(os.path.exists({str(marker)!r}))")
    assert bob.text.strip() == "False"  # his kernel answers him, and never ran hers
    alice.execute("kc.stop_channels()")
