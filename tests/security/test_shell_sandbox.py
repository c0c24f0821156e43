"""What a ``shell`` command can reach, mode by mode, with the real sandbox: a secret planted in a
fake home, the workspace's ``.git``, a loopback listener. Refused under ``workspace-write`` (the
denial named, for the person to be offered a run outside), allowed under ``danger-full-access``.
And the fail-closed path: where user namespaces cannot be had, nothing runs and the message is
the one the MCP servers get."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from nbagent.config import load_config
from nbagent.core.approval import SANDBOX_DENIAL
from nbagent.protocol import CallInfo, ToolResult
from nbagent.sandbox import OPT_OUT, available
from nbagent.tools import ShellTools, shell_policy
from tests.trusting import clean_environ

pytestmark = pytest.mark.skipif(bool(available()), reason=f"no sandbox here: {available()}")

SECRET = "shell-secret-" + os.urandom(6).hex()


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake home with ``~/.ssh/id_rsa``, a workspace with a ``.git``, nbagent's home apart."""
    fake_home = tmp_path / "home"
    (fake_home / ".ssh").mkdir(parents=True)
    (fake_home / ".ssh" / "id_rsa").write_text(SECRET)
    work = tmp_path / "work"
    (work / ".git").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(fake_home))
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "nbagent-home"))
    monkeypatch.chdir(work)
    return work


@pytest.fixture
def listener() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


def run(mode: str, *argv: str) -> ToolResult:
    config = load_config(os.getcwd(), overrides={"sandbox_mode": mode})
    tools = ShellTools(shell_policy(config))
    [spec] = tools.list_tools()
    assert spec.sandboxed == (mode != "danger-full-access")
    info = CallInfo(thread_id="t", turn_id="u", call_id="c")
    return asyncio.run(tools.call_tool(spec, {"command": list(argv)}, info))


def text(result: ToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def test_workspace_write_hides_secrets_and_refuses_writes_outside_git_and_network(workspace: Path, listener: int) -> None:
    home = os.environ["HOME"]
    secret = run("workspace-write", "cat", f"{home}/.ssh/id_rsa")
    assert SECRET not in text(secret) and secret.is_error

    outside = run("workspace-write", "touch", f"{home}/planted")
    assert (outside.meta or {}).get(SANDBOX_DENIAL) == f"touch: cannot touch '{home}/planted': Permission denied"
    assert not Path(home, "planted").exists()

    git = run("workspace-write", "touch", ".git/config")
    assert "Read-only file system" in (git.meta or {}).get(SANDBOX_DENIAL, ""), text(git)
    assert not (workspace / ".git" / "config").exists()

    net = run("workspace-write", "bash", "-c", f"echo hi > /dev/tcp/127.0.0.1/{listener}")
    denial = (net.meta or {}).get(SANDBOX_DENIAL, "")
    assert f"127.0.0.1/{listener}" in denial and "Network is unreachable" in denial, text(net)

    inside = run("workspace-write", "bash", "-c", "echo ok > made && cat made")
    assert not inside.is_error and "ok" in text(inside) and (workspace / "made").exists()


def test_danger_full_access_allows_each_of_them(workspace: Path, listener: int) -> None:
    home = os.environ["HOME"]
    assert SECRET in text(run("danger-full-access", "cat", f"{home}/.ssh/id_rsa"))
    assert not run("danger-full-access", "touch", f"{home}/planted").is_error and Path(home, "planted").exists()
    assert not run("danger-full-access", "touch", ".git/config").is_error
    assert not run("danger-full-access", "bash", "-c", f"echo hi > /dev/tcp/127.0.0.1/{listener}").is_error


def test_without_user_namespaces_nothing_runs_and_the_message_says_why(tmp_path: Path) -> None:
    """A system that forbids user namespaces (a user namespace whose limit is 0, as in a container
    that allows none): the call fails naming what is missing and the key that opts out, and the
    command never ran."""
    work = tmp_path / "work"
    work.mkdir()
    marker = tmp_path / "ran"
    program = textwrap.dedent(f"""
        import asyncio
        from nbagent.config import load_config
        from nbagent.protocol import CallInfo
        from nbagent.tools import ShellTools, shell_policy
        tools = ShellTools(shell_policy(load_config({str(work)!r}, overrides={{"sandbox_mode": "workspace-write"}})))
        [spec] = tools.list_tools()
        info = CallInfo(thread_id="t", turn_id="u", call_id="c")
        result = asyncio.run(tools.call_tool(spec, {{"command": ["touch", {str(marker)!r}]}}, info))
        print(result.is_error, result.content[0].text)
    """)
    env = clean_environ() | {"NBAGENT_HOME": str(tmp_path / "home")}
    script = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
    proc = subprocess.run(
        ["unshare", "-Ur", "sh", "-c", script, "sh", sys.executable, "-c", program],
        cwd=work, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert out.startswith("True The command was not started"), out
    assert "user namespaces" in out and OPT_OUT in out, out
    assert not marker.exists()
