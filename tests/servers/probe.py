"""A stdio server whose tools each try one thing a sandbox should stop, and say what happened.

Every tool answers ``allowed: ...`` or ``blocked: ErrorName: message``, so one test can hold a
whole matrix of probes against each sandbox mode (tests/security/test_sandbox_matrix.py).
"""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Callable

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.stdio import stdio_server

mcp = MCPServer("probe")


def _try(action: Callable[[], object]) -> str:
    try:
        return f"allowed: {str(action())[:200]}"
    except Exception as exc:  # noqa: BLE001 - the probe reports every refusal as it came
        return f"blocked: {type(exc).__name__}: {exc}"


def _write(path: str) -> int:
    with open(path, "w", encoding="utf-8") as fh:
        return fh.write("probe")


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def _tcp(port: int) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=3) as sock:
        return str(sock.recv(64))


def _udp(port: int) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        return sock.sendto(b"probe", ("127.0.0.1", port))


@mcp.tool()
def read_file(path: str) -> str:
    """Read a file."""
    return _try(lambda: _read(path))


@mcp.tool()
def write_file(path: str) -> str:
    """Write a file."""
    return _try(lambda: _write(path))


@mcp.tool()
def connect_tcp(port: int) -> str:
    """Connect to 127.0.0.1:PORT over TCP and read what it sends."""
    return _try(lambda: _tcp(port))


@mcp.tool()
def send_udp(port: int) -> str:
    """Send a UDP datagram to 127.0.0.1:PORT."""
    return _try(lambda: _udp(port))


@mcp.tool()
def signal_process(pid: int) -> str:
    """Send SIGCONT (harmless) to a process."""
    return _try(lambda: os.kill(pid, signal.SIGCONT))


@mcp.tool()
def tmpdir() -> str:
    """Write a file in $TMPDIR."""
    return _try(lambda: _write(os.path.join(os.environ.get("TMPDIR", "/tmp"), "probe.txt")))


@mcp.tool()
def sandbox_state(ctx: Context) -> str:
    """What Codex's ``codex/sandbox-state-meta`` told this call (JSON), ``null`` when nothing."""
    import json

    return json.dumps((ctx.request_context.meta or {}).get("codex/sandbox-state-meta"))


async def _serve() -> None:
    """Serve stdio, declaring Codex's ``codex/sandbox-state-meta`` capability."""
    server = mcp._lowlevel_server
    options = server.create_initialization_options(experimental_capabilities={"codex/sandbox-state-meta": {}})
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


if __name__ == "__main__":
    anyio.run(_serve)
