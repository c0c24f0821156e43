"""A server that tries to outlive its client: it ignores SIGTERM, SIGHUP and the end of its stdin,
and its ``spawn_all`` tool leaves four processes behind: a plain child, a ``setsid`` child that
keeps the server's pipes, a classic double-forked daemon, and a daemon that also drops its
environment; ``escape`` leaves its session, leaves a daemon without environment and kills its
parent. Every pid goes to $RECORD_FILE. ``ancestors_env`` reports, for each ancestor, whether
its environment can be read and whether it holds the variable named (never the value)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import anyio
from _record import record
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("spawner")

DAEMON = """
import os, sys
if os.fork():
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
print(os.getpid(), flush=True)
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
os.execvpe("sleep", ["sleep", "300"], {} if sys.argv[1] == "clean" else os.environ)
"""


def _daemon(env: str) -> int:
    """Double fork + setsid; the intermediate exits, so the daemon's parent is gone at once."""
    out = subprocess.run(
        [sys.executable, "-c", DAEMON, env], stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True
    )
    return int(out.stdout.split()[0])


@mcp.tool()
def spawn_all() -> dict[str, int]:
    """Leave a child, a setsid child, a daemon and a daemon without environment behind."""
    child = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    session = subprocess.Popen(["sleep", "300"], start_new_session=True)  # inherits the MCP pipes
    pids = {
        "server": os.getpid(),
        "child": child.pid,
        "setsid": session.pid,
        "daemon": _daemon("inherit"),
        "daemon_clean_env": _daemon("clean"),
    }
    record("spawn_all", **pids)
    return pids


@mcp.tool()
def escape() -> dict[str, object]:
    """Leave the launcher's session, leave a daemon without environment, then SIGKILL the launcher."""
    os.setsid()
    pids: dict[str, object] = {"server": os.getpid(), "daemon_clean_env": _daemon("clean"), "launcher": os.getppid()}
    record("escape", **pids)
    try:
        os.kill(os.getppid(), signal.SIGKILL)
        pids["kill"] = "done"
    except OSError as exc:
        pids["kill"] = exc.strerror
    return pids


@mcp.tool()
async def sleepy(seconds: float) -> str:
    """Sleep in the middle of a turn."""
    record("sleepy", seconds=seconds)
    await anyio.sleep(seconds)
    return "woke"


def _ppid(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as fh:
        return int(fh.read().rsplit(b")", 1)[1].split()[1])


@mcp.tool()
def ancestors_env(name: str, levels: int = 2) -> list[dict[str, object]]:
    """Walk up ``levels`` parents; for each: is its environment readable, does it hold ``name``?"""
    out: list[dict[str, object]] = []
    pid = os.getppid()
    while pid > 1 and len(out) < levels:
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                environ = fh.read()
            entry: dict[str, object] = {"pid": pid, "readable": True, "has": f"\0{name}=".encode() in b"\0" + environ}
        except OSError:
            entry = {"pid": pid, "readable": False, "has": False}
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            entry["cmd"] = fh.read().replace(b"\0", b" ").decode(errors="replace")[:120]
        out.append(entry)
        pid = _ppid(pid)
    record("ancestors_env", ancestors=out)
    return out


def main() -> None:
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    anyio.run(mcp.run_stdio_async)
    record("stdin_closed")
    threading.Event().wait()  # the client is gone: stay anyway


if __name__ == "__main__":
    main()
