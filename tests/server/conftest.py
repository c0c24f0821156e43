"""Fixtures: nbagent's MCP server as a real subprocess (stdio or HTTP), real SDK clients."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.trusting import TRUSTED

ROOT = Path(__file__).resolve().parents[2]
RECORDER = Path(__file__).parent / "servers" / "recorder.py"
MODES = ["legacy", "2026-07-28"]
OPEN = "--allow-config-override"
"""The forwarding tests choose model, policy and MCP servers per call, which needs this flag."""


@dataclass
class ServerEnv:
    """Where one test's server keeps its state, and how its subprocesses are started."""

    tmp: Path
    home: Path
    work: Path
    record: Path
    scripts: int = 0

    def env(self) -> dict[str, str]:
        return {
            "NBAGENT_HOME": str(self.home),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.tmp),
            "PYTHONPATH": str(ROOT),
            "RECORD_FILE": str(self.record),
            **TRUSTED,
        }

    def script(self, *responses: dict[str, Any]) -> str:
        self.scripts += 1
        path = self.tmp / f"script{self.scripts}.json"
        path.write_text(json.dumps({"responses": list(responses)}))
        return f"replay:{path}"

    def recorder(self, **settings: Any) -> dict[str, Any]:
        """The recorder's ``[mcp_servers.rec]`` table: its record file's folder, outside the
        workspace, is a writable root of its sandbox."""
        return {"command": sys.executable, "args": [str(RECORDER)], "env": {"RECORD_FILE": str(self.record)},
                "sandbox_workspace_write": {"writable_roots": [str(self.record.parent)]}, **settings}

    def recorder_config(self) -> dict[str, Any]:
        """``config`` for an ``agent`` call: the inner session gets the recorder MCP server."""
        return {"mcp_servers": {"rec": self.recorder()}}

    def records(self) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines() if line.strip()]


@pytest.fixture
def senv(tmp_path: Path) -> ServerEnv:
    work = tmp_path / "work"
    work.mkdir()
    return ServerEnv(tmp=tmp_path, home=tmp_path / "home", work=work, record=tmp_path / "records.jsonl")


@dataclass
class Seen:
    """What a client received besides results."""

    progress: list[str | None] = field(default_factory=list)
    logs: list[Any] = field(default_factory=list)
    elicitations: list[types.ElicitRequestParams] = field(default_factory=list)

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append(message)

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(params.data)


Answer = Callable[[types.ElicitRequestParams], types.ElicitResult]


@dataclass
class HttpServer:
    url: str
    token: str
    process: subprocess.Popen[str]


def start_http_server(senv: ServerEnv, *extra: str, token: str | None = "test-token-0123456789") -> HttpServer:
    args = [sys.executable, "-m", "nbagent.server", "--http", "127.0.0.1:0", *extra]
    if token:
        args += ["--token", token]
    process = subprocess.Popen(args, env=senv.env(), cwd=senv.work, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    deadline = time.monotonic() + 30
    lines = []
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        lines.append(line)
        match = re.search(r"listening on (http://\S+)", line)
        if match:
            url = match.group(1)
            if token is None:
                printed = process.stderr.readline()
                token = printed.split("bearer token:", 1)[1].strip()
            return HttpServer(url=url, token=token, process=process)
        if process.poll() is not None:
            break
    process.kill()
    raise RuntimeError("HTTP server did not start: " + "".join(lines))


@pytest.fixture
def http_server(senv: ServerEnv) -> Iterator[HttpServer]:
    server = start_http_server(senv, OPEN)
    yield server
    server.process.terminate()
    try:
        server.process.wait(10)
    except subprocess.TimeoutExpired:
        server.process.kill()


@asynccontextmanager
async def connect(
    transport: str,
    mode: str,
    senv: ServerEnv,
    *,
    http: HttpServer | None = None,
    answer: Answer | None = None,
    seen: Seen | None = None,
    server_args: tuple[str, ...] = (OPEN,),
) -> AsyncIterator[Client]:
    """A real SDK client on nbagent's server; ``answer`` makes it elicitation-capable."""
    seen = seen or Seen()

    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.elicitations.append(params)
        assert answer is not None
        return answer(params)

    kwargs: dict[str, Any] = dict(mode=mode, logging_callback=seen.on_log, log_level="debug")
    if answer is not None:
        kwargs["elicitation_callback"] = elicit
    if transport == "stdio":
        target: Any = StdioServerParameters(
            command=sys.executable, args=["-m", "nbagent.server", *server_args], env=senv.env(), cwd=str(senv.work)
        )
        async with Client(target, **kwargs) as client:
            yield client
    else:
        assert http is not None
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {http.token}"}, timeout=60) as hc:
            async with Client(streamable_http_client(http.url, http_client=hc), **kwargs) as client:
                yield client


@pytest.fixture
def servers() -> Iterator[list[HttpServer]]:
    """HTTP servers a test starts (it appends them), stopped after it, killed if they linger."""
    started: list[HttpServer] = []
    yield started
    for server in started:
        server.process.terminate()
        try:
            server.process.wait(10)
        except subprocess.TimeoutExpired:
            server.process.kill()
