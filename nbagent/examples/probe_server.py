"""A real MCP server whose tools each try one thing a sandbox should stop, and say what happened.

Each tool answers ``allowed: ...`` or ``blocked: ErrorName: message``, so the same server started
under each ``sandbox_mode`` shows, call by call, what the operating system let it do. It declares
Codex's experimental capability ``codex/sandbox-state-meta``, so each ``tools/call`` it receives
carries the sandbox it runs in, and ``sandbox_state`` answers with what it received.

Run: ``python -m nbagent.examples.probe_server`` (stdio).
"""

from __future__ import annotations

import json
import os
import signal
import socket
from collections.abc import Callable

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.stdio import stdio_server

SANDBOX_STATE_META = "codex/sandbox-state-meta"

server = MCPServer("probe", instructions="Probes: each tool tries one thing and reports allowed or blocked.")


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


@server.tool()
def read_file(path: str) -> str:
    """Read a file."""
    return _try(lambda: _read(path))


@server.tool()
def write_file(path: str) -> str:
    """Write a file."""
    return _try(lambda: _write(path))


@server.tool()
def connect_tcp(port: int) -> str:
    """Connect to 127.0.0.1:PORT over TCP and read what it sends."""
    return _try(lambda: _tcp(port))


@server.tool()
def send_udp(port: int) -> str:
    """Send a UDP datagram to 127.0.0.1:PORT."""
    return _try(lambda: _udp(port))


@server.tool()
def signal_process(pid: int) -> str:
    """Send SIGCONT (harmless) to a process."""
    return _try(lambda: os.kill(pid, signal.SIGCONT))


@server.tool()
def tmpdir() -> str:
    """Write a file in $TMPDIR."""
    return _try(lambda: _write(os.path.join(os.environ.get("TMPDIR", "/tmp"), "probe.txt")))


@server.tool()
def sandbox_state(ctx: Context) -> str:
    """What Codex's ``codex/sandbox-state-meta`` told this call (JSON), ``null`` when nothing."""
    return json.dumps((ctx.request_context.meta or {}).get(SANDBOX_STATE_META))


async def _serve() -> None:
    """Serve stdio, declaring the capability (the high-level server has no parameter for it)."""
    low = server._lowlevel_server
    options = low.create_initialization_options(experimental_capabilities={SANDBOX_STATE_META: {}})
    async with stdio_server() as (read, write):
        await low.run(read, write, options)


def main() -> None:
    anyio.run(_serve)


if __name__ == "__main__":
    main()
