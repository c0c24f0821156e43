"""Fixtures for the MCP runtime tests: real servers over real stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from nbagent.config import McpServerConfig
from nbagent.mcp.manager import McpConnectionManager
from nbagent.protocol import CallInfo, ElicitationRequested
from nbagent.protocol.elicitation import ElicitOutcome
from nbagent.sandbox import SandboxWorkspaceWrite

SERVERS = Path(__file__).resolve().parents[1] / "servers"
NODE_DIR = Path(__file__).resolve().parents[1] / "node"
EVERYTHING = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def server_cfg(script: str, record: Path | None = None, **kw: Any) -> McpServerConfig:
    """A stdio config running one of tests/servers/*.py with this interpreter.

    The record file's folder is outside the workspace: it is a writable root of the server's
    sandbox, as a user would give it."""
    env = dict(kw.pop("env", {}))
    if record is not None:
        env["RECORD_FILE"] = str(record)
        kw.setdefault("sandbox_workspace_write", SandboxWorkspaceWrite(writable_roots=[str(record.parent)]))
    return McpServerConfig(command=sys.executable, args=[str(SERVERS / script)], env=env, **kw)


def records(path: Path) -> list[dict[str, Any]]:
    """What the server says it executed."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def call_info(call_id: str = "call_1") -> CallInfo:
    return CallInfo(thread_id="thread_t", turn_id="turn_t", call_id=call_id)


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie (no psutil)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def host_pids(root: int, inside: dict[str, int]) -> dict[str, int]:
    """The pids, as seen here, of the processes under ``root`` that a sandboxed server reports by
    their pids inside its own PID namespace (``NSpid``'s last entry); a name not found is left out."""
    children: dict[int, list[int]] = {}
    innermost: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        children.setdefault(int(fields["PPid"]), []).append(int(entry))
        innermost[int(entry)] = int(fields["NSpid"].split()[-1])
    under, todo = [], [root]
    while todo:
        pid = todo.pop()
        under.append(pid)
        todo += children.get(pid, [])
    by_inner = {innermost[pid]: pid for pid in under[1:] if pid in innermost}
    return {name: by_inner[pid] for name, pid in inside.items() if pid in by_inner}


@dataclass
class Answers:
    """A scripted front end: answers elicitations in order, optionally after a delay."""

    outcomes: list[ElicitOutcome] = field(default_factory=list)
    delay: float = 0.0
    asked: list[ElicitationRequested] = field(default_factory=list)

    async def __call__(self, event: ElicitationRequested) -> ElicitOutcome:
        self.asked.append(event)
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.outcomes:
            return self.outcomes.pop(0)
        return ElicitOutcome(action="decline")


@dataclass
class Harness:
    """Builds managers whose events are recorded; closes them all at teardown."""

    tmp: Path
    events: list[Any] = field(default_factory=list)
    answers: Answers = field(default_factory=Answers)
    managers: list[McpConnectionManager] = field(default_factory=list)
    arrived: dict[int, float] = field(default_factory=dict)
    """id(event) -> wall-clock time it reached the harness (payloads carry no time of their own)."""

    @property
    def record(self) -> Path:
        return self.tmp / "records.jsonl"

    def cfg(self, script: str, **kw: Any) -> McpServerConfig:
        return server_cfg(script, self.record, **kw)

    async def start(self, servers: dict[str, McpServerConfig]) -> McpConnectionManager:
        manager = McpConnectionManager(servers, self._on_event, self.answers, self.tmp / "logs")
        self.managers.append(manager)
        await manager.start()
        return manager

    def _on_event(self, event: Any) -> None:
        self.arrived[id(event)] = time.time()
        self.events.append(event)

    def when(self, event: Any) -> float:
        """When ``event`` was emitted, as the session's bus would stamp it."""
        return self.arrived[id(event)]

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def records(self) -> list[dict[str, Any]]:
        return records(self.record)


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    h = Harness(tmp=tmp_path)
    yield h
    for manager in h.managers:
        await manager.aclose()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class HttpServer:
    url: str
    token: str
    record: Path
    pid: int


def serve_until_healthy(args: list[str], env: dict[str, str], log_path: Path, base: str) -> Iterator[int]:
    """Run a test server (its pid yielded) until ``base``/health answers, within 30 s (a loaded
    machine) or the test fails with its log; stopped at the end."""
    log = open(log_path, "w")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, *args], env={**os.environ, **env}, stdout=log, stderr=log,
                            start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=1) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"test server {args[0]} did not start: {log_path.read_text()}")
            time.sleep(0.05)
        yield proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


def _serve_http(tmp_path: Path, transport: str) -> Iterator[HttpServer]:
    """tests/servers/http_server.py on a free port; ready within 30 s or the test fails."""
    port = _free_port()
    token = "test-token-" + os.urandom(4).hex()
    record = tmp_path / "http-records.jsonl"
    args = [str(SERVERS / "http_server.py"), str(port), *(["sse"] if transport == "sse" else [])]
    env = {"HTTP_TOKEN": token, "RECORD_FILE": str(record)}
    for pid in serve_until_healthy(args, env, tmp_path / "http-server.log", f"http://127.0.0.1:{port}"):
        path = "/sse" if transport == "sse" else "/mcp"
        yield HttpServer(url=f"http://127.0.0.1:{port}{path}", token=token, record=record, pid=pid)


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[HttpServer]:
    yield from _serve_http(tmp_path, "http")


@pytest.fixture
def sse_server(tmp_path: Path) -> Iterator[HttpServer]:
    yield from _serve_http(tmp_path, "sse")


@pytest.fixture
def everything_cfg() -> Callable[..., McpServerConfig]:
    if not EVERYTHING.exists():
        pytest.skip("tests/node/node_modules missing: run `npm ci --prefix tests/node` to test server-everything")

    def make(**kw: Any) -> McpServerConfig:
        return McpServerConfig(command="node", args=[str(EVERYTHING), "stdio"], **kw)

    return make
