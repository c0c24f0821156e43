"""Nothing a stdio server started outlives nbagent: not a setsid child, not a double-forked daemon,
not a server that ignores SIGTERM and the end of its stdin; not when the CLI is sent SIGTERM or
SIGHUP in the middle of a turn, nor when it is killed outright.

Most tests run the server with ``sandbox_mode = "danger-full-access"``: they are about how
nbagent finds and kills an unconfined tree by its pids. The ``sandboxed`` tests show the same
for the default sandbox, where the server's PID namespace holds the whole tree.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nbagent.mcp import landlock
from nbagent.mcp.manager import McpConnectionManager
from tests.mcp.conftest import Answers, call_info, host_pids, records, server_cfg
from tests.security.procs import (
    LEFT_BEHIND,
    kill_leftovers,
    replay,
    spawned,
    survivors,
    tool_call,
    write_project,
)  # fmt: skip
from tests.trusting import clean_environ
from tests.waiting import until, wait_for


async def _call(manager: McpConnectionManager, tool: str) -> None:
    spec = next(s for s in manager.list_tools() if s.raw_name == tool)
    result = await manager.call_tool(spec, {}, call_info())
    assert not result.is_error, result


UNSANDBOXED = "danger-full-access"


async def _started(tmp_path: Path, **cfg: object) -> tuple[McpConnectionManager, dict[str, int]]:
    """The spawner started and its ``spawn_all`` run: the pids of all it left, as seen here."""
    record = tmp_path / "records.jsonl"
    cfg.setdefault("sandbox_mode", UNSANDBOXED)
    servers = {"procs": server_cfg("spawner.py", record, **cfg)}
    manager = McpConnectionManager(servers, lambda event: None, Answers(), tmp_path / "logs")
    await manager.start()
    await _call(manager, "spawn_all")
    launched = manager.pids()[0]
    left = spawned(record)
    if cfg["sandbox_mode"] != UNSANDBOXED:  # reported by their pids inside the sandbox
        left = host_pids(launched, left)
        assert set(left) == set(LEFT_BEHIND)
    pids = {**left, "launched": launched}
    assert survivors(pids, within=0) == pids  # all five really run before the close
    return manager, pids


@pytest.mark.parametrize("sandbox", [UNSANDBOXED, "workspace-write"])
async def test_close_kills_setsid_children_daemons_and_a_server_ignoring_sigterm(tmp_path: Path, sandbox: str) -> None:
    manager, pids = await _started(tmp_path, sandbox_mode=sandbox)
    try:
        await manager.aclose()
        assert survivors(pids) == {}
    finally:
        kill_leftovers(pids.values())


async def test_without_the_launcher_the_group_tree_and_marker_still_catch_them(tmp_path: Path) -> None:
    """``env_clear_parent = false``: only a daemon that also dropped its environment can escape."""
    manager, pids = await _started(tmp_path, env_clear_parent=False)
    assert pids["launched"] == pids["server"]
    try:
        await manager.aclose()
        caught = {name: pid for name, pid in pids.items() if name != "daemon_clean_env"}
        assert survivors(caught) == {}
    finally:
        kill_leftovers(pids.values())


async def test_a_crashed_server_takes_its_descendants_with_it(tmp_path: Path) -> None:
    manager, pids = await _started(tmp_path)
    try:
        os.kill(pids["server"], signal.SIGKILL)  # the server dies; the session goes on
        left = {name: pid for name, pid in pids.items() if name != "launched"}
        assert survivors(left) == {}
        await until(lambda: manager.status()["procs"].state == "failed", "the crash to be reported", 10)
    finally:
        await manager.aclose()
        kill_leftovers(pids.values())


@pytest.mark.skipif(landlock.abi() < 6, reason="the kernel cannot scope a server's signals (Landlock ABI 6, Linux 6.12)")
async def test_a_server_that_kills_its_launcher_leaves_nothing_behind(tmp_path: Path) -> None:
    """The server leaves the launcher's session, leaves a daemon without environment (so neither
    the group nor the tag finds it) and SIGKILLs its launcher (so no parent chain leads to it)."""
    record = tmp_path / "records.jsonl"
    servers = {"procs": server_cfg("spawner.py", record, sandbox_mode=UNSANDBOXED)}
    manager = McpConnectionManager(servers, lambda event: None, Answers(), tmp_path / "logs")
    await manager.start()
    pids: dict[str, int] = {}
    try:
        await _call(manager, "escape")
        entry = next(r for r in records(record) if r["tool"] == "escape")
        pids = {name: entry[name] for name in ("server", "daemon_clean_env", "launcher")}
        assert survivors({"daemon": pids["daemon_clean_env"]}, within=0)  # it really runs before the close
        await manager.aclose()
        assert survivors(pids) == {}
    finally:
        await manager.aclose()
        kill_leftovers(pids.values())


async def test_sandboxed_a_server_cannot_kill_its_launcher_and_leaves_nothing_behind(tmp_path: Path) -> None:
    """In the sandbox the same escape fails at the kill (the launcher is outside the server's PID
    namespace), and the daemon it left dies with the namespace at close."""
    record = tmp_path / "records.jsonl"
    manager = McpConnectionManager({"procs": server_cfg("spawner.py", record)}, lambda event: None, Answers(), tmp_path / "logs")
    await manager.start()
    pids: dict[str, int] = {}
    try:
        spec = next(s for s in manager.list_tools() if s.raw_name == "escape")
        result = await manager.call_tool(spec, {}, call_info())
        assert not result.is_error and result.structured is not None, result
        assert result.structured["kill"] != "done"
        entry = next(r for r in records(record) if r["tool"] == "escape")
        pids = {**host_pids(manager.pids()[0], {name: entry[name] for name in ("server", "daemon_clean_env")}),
                "launched": manager.pids()[0]}
        assert survivors(pids, within=0) == pids and len(pids) == 3  # all really run before the close
        await manager.aclose()
        assert survivors(pids) == {}
    finally:
        await manager.aclose()
        kill_leftovers(pids.values())


# ----- the CLI ---------------------------------------------------------------------------


def _cli(tmp_path: Path, *argv: str, sandbox: str = UNSANDBOXED) -> tuple[subprocess.Popen[str], Path]:
    record = tmp_path / "records.jsonl"
    work = tmp_path / "work"
    write_project(work, record, sandbox_mode=sandbox)
    env = clean_environ()
    env["NBAGENT_HOME"] = str(tmp_path / "home")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    proc = subprocess.Popen(
        [sys.executable, "-m", "nbagent.cli", *argv], cwd=work, env=env, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    return proc, record


def _mid_turn(proc: subprocess.Popen[str], record: Path, sandboxed: bool = False) -> dict[str, int]:
    """Wait until the server left its processes behind and sleeps in a tool call: their pids as
    seen here (``sandboxed``: mapped from the sandbox's PID namespace, under the CLI)."""
    try:
        wait_for(lambda: any(r["tool"] == "sleepy" for r in records(record)) or proc.poll() is not None,
                 "the turn to reach the sleeping tool call", 60)
    except AssertionError:
        proc.kill()
        raise
    assert proc.poll() is None, proc.communicate()
    if not sandboxed:
        return spawned(record)
    pids = host_pids(proc.pid, spawned(record))
    assert set(pids) == set(LEFT_BEHIND)
    return pids


def _script(tmp_path: Path) -> str:
    tmp_path.mkdir(parents=True, exist_ok=True)
    return replay(tmp_path / "script.json", tool_call("spawn_all"), tool_call("sleepy", seconds=600), {"text": "done"})


SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""Each test sends each of these to its own process; the processes run side by side (one start-up
time for both, on a machine with a core to spare)."""


@contextlib.contextmanager
def _each_signal(tmp_path: Path, start: Callable[[Path], tuple[subprocess.Popen[str], Path]]) -> Iterator[
    list[tuple[signal.Signals, subprocess.Popen[str], dict[str, int]]]
]:
    """Start one process per signal, wait until each is mid-turn, then give them all to be
    signalled; every process and what it spawned is killed at the end, whatever failed."""
    started = [(sig, *start(tmp_path / sig.name)) for sig in SIGNALS]
    pids: dict[signal.Signals, dict[str, int]] = {}
    try:
        for sig, proc, record in started:
            pids[sig] = _mid_turn(proc, record)
        yield [(sig, proc, pids[sig]) for sig, proc, _ in started]
    finally:
        for sig, proc, _ in started:
            proc.kill()
            kill_leftovers(pids.get(sig, {}).values())


def test_run_sent_a_signal_mid_turn_leaves_no_server_process(tmp_path: Path) -> None:
    def start(folder: Path) -> tuple[subprocess.Popen[str], Path]:
        return _cli(folder, "run", "-m", _script(folder), "--policy", "full-auto", "--json", "go")

    with _each_signal(tmp_path, start) as running:
        for sig, proc, pids in running:
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=60)
            assert survivors(pids) == {}, sig.name
            assert proc.returncode == 128 + sig, (sig.name, err)
            kinds = [json.loads(line)["type"] for line in out.splitlines() if line.startswith("{")]
            assert kinds[-1] == "shutdown_complete", sig.name  # the same orderly end as a normal exit


@pytest.mark.parametrize("sandbox", [UNSANDBOXED, "workspace-write"])
def test_run_killed_outright_leaves_no_server_process(tmp_path: Path, sandbox: str) -> None:
    """SIGKILL cannot be caught: the launcher notices its parent died and cleans up itself."""
    proc, record = _cli(tmp_path, "run", "-m", _script(tmp_path), "--policy", "full-auto", "--json", "go", sandbox=sandbox)
    pids = _mid_turn(proc, record, sandboxed=sandbox != UNSANDBOXED)
    try:
        proc.kill()
        proc.communicate(timeout=60)
        assert survivors(pids) == {}
    finally:
        kill_leftovers(pids.values())


def _rpc(proc: subprocess.Popen[str], message: dict[str, object]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    proc.stdin.flush()


def test_mcp_server_sent_a_signal_mid_call_leaves_no_server_process(tmp_path: Path) -> None:
    def start(folder: Path) -> tuple[subprocess.Popen[str], Path]:
        proc, record = _cli(folder, "mcp-server", "--model", _script(folder), "--policy", "full-auto")
        _rpc(proc, {"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        _rpc(proc, {"method": "notifications/initialized"})
        _rpc(proc, {"id": 2, "method": "tools/call", "params": {"name": "agent", "arguments": {"prompt": "go"}}})
        return proc, record

    with _each_signal(tmp_path, start) as running:
        for sig, proc, pids in running:
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=60)
            assert survivors(pids) == {}, sig.name
            assert proc.returncode == 128 + sig, (sig.name, err)  # an orderly exit, not death by the signal


def _post(url: str, token: str, body: dict[str, object], session: str | None = None) -> tuple[str | None, bytes]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
    if session:
        headers["Mcp-Session-Id"] = session
    request = urllib.request.Request(url, json.dumps({"jsonrpc": "2.0", **body}).encode(), headers)
    with urllib.request.urlopen(request, timeout=600) as resp:
        return resp.headers.get("Mcp-Session-Id"), resp.read()


def test_mcp_server_http_sent_a_signal_mid_call_leaves_no_server_process(tmp_path: Path) -> None:
    token = "t-" + os.urandom(8).hex()
    started = [(folder, _cli(folder, "mcp-server", "--http", "127.0.0.1:0", "--token", token,
                             "--model", _script(folder), "--policy", "full-auto"))
               for folder in (tmp_path / sig.name for sig in SIGNALS)]

    def start(folder: Path) -> tuple[subprocess.Popen[str], Path]:
        """The servers were started side by side above; here each is told to begin its call."""
        proc, record = next(cli for where, cli in started if where == folder)
        assert proc.stderr is not None
        url = wait_for(lambda: re.search(r"listening on (\S+)", proc.stderr.readline() or "-"), "the server to listen", 60)[1]
        session, _ = _post(url, token, {"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        _post(url, token, {"method": "notifications/initialized"}, session)
        call = threading.Thread(target=lambda: suppress_errors(_post, url, token, {
            "id": 2, "method": "tools/call", "params": {"name": "agent", "arguments": {"prompt": "go"}}}, session),
            daemon=True)
        call.start()
        return proc, record

    try:
        with _each_signal(tmp_path, start) as running:
            for sig, proc, pids in running:
                proc.send_signal(sig)
                _, err = proc.communicate(timeout=60)
                assert survivors(pids) == {}, sig.name
                assert proc.returncode == 128 + sig, (sig.name, err)
                assert "Traceback" not in err, err  # the HTTP server shuts down in order, quietly
    finally:
        for _, (proc, _) in started:
            proc.kill()


def suppress_errors(fn: Callable[..., object], *args: object) -> None:
    """The call's connection drops when the server stops; that is expected here."""
    try:
        fn(*args)
    except OSError:
        pass
