"""What a stdio MCP server can reach, mode by mode: a real probing server (tests/servers/probe.py)
run by nbagent's MCP runtime, each probe a thing a server must not do unless the person chose
``danger-full-access``: read a planted secret in the home, a kernel's connection file, nbagent's
own ``/proc/PID/environ``; write outside the workspace or into its ``.git``; reach a loopback
listener over TCP or UDP; signal nbagent. And the fail-closed path: where user namespaces cannot
be had, the server does not start and the message says what is missing and the key that opts out.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nbagent.config import Config, McpServerConfig
from nbagent.mcp.manager import McpConnectionManager
from nbagent.mcp.sandboxed import permissions
from nbagent.protocol import McpStartupUpdate, ToolSpec
from nbagent.sandbox import available
from tests.mcp.conftest import SERVERS, Answers, call_info
from tests.trusting import clean_environ

pytestmark = pytest.mark.skipif(bool(available()), reason=f"no sandbox here: {available()}")

SECRET = "probe-secret-" + os.urandom(6).hex()


@dataclass
class World:
    """A fake home with secrets, a workspace with a ``.git``, a loopback TCP and UDP listener."""

    home: Path
    workspace: Path
    outside: Path
    nbagent_home: Path
    tcp_port: int
    udp_port: int


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET)
    runtime = home / ".local" / "share" / "jupyter" / "runtime"
    runtime.mkdir(parents=True)
    (runtime / "kernel-probe.json").write_text(json.dumps({"key": SECRET}))
    workspace = tmp_path / "work"
    (workspace / ".git").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR", "XDG_DATA_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NBAGENT_PROBE_SECRET", SECRET)  # what /proc/<nbagent>/environ would leak
    tcp = socket.create_server(("127.0.0.1", 0))
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = tcp.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"hello")

    threading.Thread(target=serve, daemon=True).start()
    yield World(home, workspace, tmp_path / "outside", tmp_path / "nbhome", tcp.getsockname()[1], udp.getsockname()[1])
    tcp.close()
    udp.close()


@pytest.fixture
async def probe(world: World, request: pytest.FixtureRequest) -> AsyncIterator[McpConnectionManager]:
    mode = request.param  # None: no sandbox key at all, the default
    config = Config(**({"sandbox_mode": mode} if mode else {}), home=str(world.nbagent_home), workspace=str(world.workspace))
    # The legacy handshake: the SDK answers server/discover without the experimental capabilities.
    servers = {"probe": McpServerConfig(command=sys.executable, args=[str(SERVERS / "probe.py")], protocol="legacy")}
    manager = McpConnectionManager(servers, lambda event: None, Answers(), world.nbagent_home / "logs", config)
    await manager.start()
    yield manager
    await manager.aclose()


async def _call(manager: McpConnectionManager, tool: str, **arguments: Any) -> str:
    spec = ToolSpec(name=f"mcp__probe__{tool}", server="probe", raw_name=tool)
    result = await manager.call_tool(spec, arguments, call_info())
    assert not result.is_error, result
    return str(result.content[0].text)  # type: ignore[union-attr]


def _probes(world: World) -> dict[str, tuple[str, dict[str, Any]]]:
    kernel = world.home / ".local" / "share" / "jupyter" / "runtime" / "kernel-probe.json"
    return {
        "read ~/.ssh/id_rsa": ("read_file", {"path": str(world.home / ".ssh" / "id_rsa")}),
        "read the kernel connection file": ("read_file", {"path": str(kernel)}),
        "read nbagent's /proc/PID/environ": ("read_file", {"path": f"/proc/{os.getpid()}/environ"}),
        "write outside the workspace": ("write_file", {"path": str(world.outside / "x.txt")}),
        "write into the workspace's .git": ("write_file", {"path": str(world.workspace / ".git" / "config")}),
        "connect to a loopback TCP listener": ("connect_tcp", {"port": world.tcp_port}),
        "send UDP": ("send_udp", {"port": world.udp_port}),
        "signal nbagent": ("signal_process", {"pid": os.getpid()}),
    }


@pytest.mark.parametrize("probe", ["workspace-write", "read-only", None], ids=str, indirect=True)
async def test_every_probe_is_blocked_in_the_sandbox(probe: McpConnectionManager, world: World) -> None:
    answers = {name: await _call(probe, tool, **args) for name, (tool, args) in _probes(world).items()}
    allowed = {name: answer for name, answer in answers.items() if not answer.startswith("blocked")}
    assert not allowed, json.dumps(answers, indent=1)
    assert all(SECRET not in answer for answer in answers.values())
    assert not (world.outside / "x.txt").exists() and not (world.workspace / ".git" / "config").exists()
    assert (await _call(probe, "tmpdir")).startswith("allowed")  # its private TMPDIR


@pytest.mark.parametrize("probe", ["workspace-write"], indirect=True)
async def test_workspace_write_writes_the_workspace(probe: McpConnectionManager, world: World) -> None:
    assert (await _call(probe, "write_file", path=str(world.workspace / "notes.txt"))).startswith("allowed")
    assert (world.workspace / "notes.txt").read_text() == "probe"


@pytest.mark.parametrize("probe", ["read-only"], indirect=True)
async def test_read_only_writes_nothing_but_its_tmpdir(probe: McpConnectionManager, world: World) -> None:
    assert (await _call(probe, "write_file", path=str(world.workspace / "notes.txt"))).startswith("blocked")
    assert (await _call(probe, "read_file", path=str(SERVERS / "probe.py"))).startswith("allowed")


@pytest.mark.parametrize("probe", ["danger-full-access"], indirect=True)
async def test_every_probe_is_allowed_without_the_sandbox(probe: McpConnectionManager, world: World) -> None:
    """The control: each probe does reach what it aims at, so the blocked answers above are the
    sandbox's doing. Signals are the exception: the launcher's Landlock scope keeps a server's
    signals inside its own tree in every mode (docs/security.md, "Processes servers start")."""
    answers = {name: await _call(probe, tool, **args) for name, (tool, args) in _probes(world).items()}
    assert answers.pop("signal nbagent").startswith("blocked: PermissionError")
    refused = {name: answer for name, answer in answers.items() if not answer.startswith("allowed")}
    assert not refused, json.dumps(answers, indent=1)
    assert SECRET in answers["read ~/.ssh/id_rsa"] and SECRET in answers["read the kernel connection file"]
    assert (world.outside / "x.txt").exists()


def test_without_user_namespaces_the_server_does_not_start_and_says_why(tmp_path: Path) -> None:
    """A system that forbids user namespaces (here: a user namespace whose limit is 0, as in a
    container that allows none): ``nbagent tools`` reports the server failed, naming what is
    missing and the key that opts out, and nothing of the server ran."""
    work = tmp_path / "work"
    work.mkdir()
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w')"
    (work / "nbagent.toml").write_text(
        'sandbox_mode = "workspace-write"\n'
        f"[mcp_servers.probe]\ncommand = {json.dumps(sys.executable)}\nargs = ['-c', {json.dumps(code)}]\n"
    )
    env = clean_environ() | {"NBAGENT_HOME": str(tmp_path / "home")}
    script = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'
    proc = subprocess.run(
        ["unshare", "-Ur", "sh", "-c", script, "sh", sys.executable, "-m", "nbagent.cli", "tools", "--json"],
        cwd=work, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert "was not started" in out and "user namespaces" in out, out
    assert 'sandbox_mode = \\"danger-full-access\\"' in out or 'sandbox_mode = "danger-full-access"' in out, out
    assert not marker.exists()


@pytest.mark.parametrize("probe", ["workspace-write"], indirect=True)
async def test_a_server_that_asks_is_told_its_sandbox_in_codex_shape(probe: McpConnectionManager, world: World) -> None:
    state = json.loads(await _call(probe, "sandbox_state"))
    assert state["sandboxCwd"] == str(world.workspace.resolve())
    assert state["sandboxPolicy"] == {
        "type": "workspace-write", "writable_roots": [], "network_access": False,
        "exclude_tmpdir_env_var": False, "exclude_slash_tmp": True,
    }  # fmt: skip


def test_the_model_is_told_the_sandbox(tmp_path: Path) -> None:
    config = Config(sandbox_mode="workspace-write", home=str(tmp_path / "home"), workspace=str(tmp_path))
    text = permissions(config)
    assert "workspace-write" in text and str(tmp_path.resolve()) in text and "network access is off" in text
    assert "run_python" in text and "outside any sandbox" in text
    assert "without a sandbox" in permissions(config.model_copy(update={"sandbox_mode": "danger-full-access"}))


async def test_a_server_that_exits_at_start_in_the_sandbox_is_told_which_keys_give_it_more(world: World) -> None:
    """A denial the runtime cannot see (the server wrote outside its roots, and gave up): the
    startup error names the sandbox and the keys to change, for this server."""
    events: list[Any] = []
    config = Config(sandbox_mode="workspace-write", home=str(world.nbagent_home), workspace=str(world.workspace))
    code = f"open({str(world.outside / 'state.db')!r}, 'w')"
    servers = {"needy": McpServerConfig(command=sys.executable, args=["-c", code])}
    manager = McpConnectionManager(servers, events.append, Answers(), world.nbagent_home / "logs", config)
    await manager.start()
    await manager.aclose()
    [failed] = [e for e in events if isinstance(e, McpStartupUpdate) and e.status == "failed"]
    assert "sandbox workspace-write, network off" in (failed.error or ""), failed
    assert 'sandbox_mode = "danger-full-access" under [mcp_servers.needy]' in (failed.error or "")
    assert "PermissionError" in (failed.stderr_tail or "")
