"""Start commands through a session's fork server (:mod:`nbagent.sandbox.forkserver`).

A launcher started from scratch costs a Python interpreter's start per command; the fork server
is started once, on the first command, and forks a launcher for each one. Each command gets its
stdin (``/dev/null``), two pipes for its output and a control socket, passed with
``SCM_RIGHTS``; its launcher tells its pid and, at the end, its return code on the control
socket, and keeps its pid until that socket is closed (:meth:`Started.close`), so killing its
tree by that pid never hits a stranger.

A fork server that died (or never answers) is replaced: a command whose launcher never told its
pid never ran, so it is tried once more with a fresh fork server before :class:`ForkServerGone`
says why it could not start. :meth:`ForkServer.close` (and the garbage collector, for one
nobody closed) kills the fork server; the launchers it forked then sweep up their commands.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import weakref
from typing import Any

FORKSERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "forkserver.py")
ATTEMPTS = 2


class ForkServerGone(RuntimeError):
    """The fork server could not start the command (it never ran)."""


class Started:
    """One command started: its launcher's ``pid`` (its process group too) and its output."""

    def __init__(
        self, pid: int, ctl: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        stdout: asyncio.StreamReader, stderr: asyncio.StreamReader, pipes: list[asyncio.BaseTransport],
    ) -> None:  # fmt: skip
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        self._ctl = ctl
        self._pipes = pipes

    async def wait(self) -> int:
        """The command's return code as ``subprocess`` gives it (negative: killed by that signal);
        ``-SIGKILL`` when its launcher was killed before it could tell."""
        try:
            line = await self._ctl[0].readline()
        except ConnectionError:
            line = b""
        return int(line) if line.endswith(b"\n") else -signal.SIGKILL

    def close(self) -> None:
        """Let the launcher exit (its pid is no longer needed) and close the output pipes."""
        self._ctl[1].close()
        for pipe in self._pipes:
            pipe.close()


class _Process:
    """The running fork server, kept apart from :class:`ForkServer` so its finaliser can stop it."""

    proc: subprocess.Popen[bytes] | None = None
    sock: socket.socket | None = None

    def stop(self) -> None:
        proc, sock, self.proc, self.sock = self.proc, self.sock, None, None
        if sock is not None:
            sock.close()
        if proc is not None:
            proc.kill()
            proc.wait()


class ForkServer:
    """A session's fork server, started on the first command and again when it has died."""

    def __init__(self) -> None:
        self._process = _Process()
        self._finalizer = weakref.finalize(self, self._process.stop)

    @property
    def pid(self) -> int | None:
        """The fork server's pid while it runs."""
        proc = self._process.proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def close(self) -> None:
        """Kill the fork server; the next command starts a new one."""
        self._process.stop()

    async def start(self, argv: list[str], env: dict[str, str], cwd: str, plan: dict[str, Any] | None) -> Started:
        """Start ``argv`` in ``cwd`` with exactly ``env``, sandboxed under ``plan`` (``None``:
        only the launcher); raises :class:`ForkServerGone` when no fork server would start it."""
        request = json.dumps({"argv": argv, "env": env, "cwd": cwd, "plan": plan}).encode()
        why = "it exited before starting the command"
        for _ in range(ATTEMPTS):
            try:
                started = await self._try(request)
            except OSError as exc:
                started, why = None, f"it could not be started ({exc.strerror or exc})"
            if started is not None:
                return started
            self.close()
        raise ForkServerGone(f"the process that starts commands failed: {why}")

    def _server(self) -> socket.socket:
        process = self._process
        if process.proc is not None and process.sock is not None and process.proc.poll() is None:
            return process.sock
        process.stop()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            process.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", FORKSERVER, str(os.getpid()), str(theirs.fileno())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env={}, pass_fds=(theirs.fileno(),), start_new_session=True,
            )  # fmt: skip
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        mine.setblocking(False)
        process.sock = mine
        return mine

    async def _try(self, request: bytes) -> Started | None:
        """One attempt; ``None`` when the fork server did not fork a launcher that told its pid."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        ctl, theirs = socket.socketpair()
        null = os.open(os.devnull, os.O_RDONLY)
        files = [open(out_r, "rb", 0), open(err_r, "rb", 0)]
        pipes: list[asyncio.BaseTransport] = []
        writer: asyncio.StreamWriter | None = None
        pid: int | None = None
        try:
            try:
                socket.send_fds(self._server(), [b"run"], [null, out_w, err_w, theirs.fileno()])
            except (BlockingIOError, BrokenPipeError, ConnectionError):
                return None  # not reading (stopped, its queue full) or gone
            finally:
                for fd in (null, out_w, err_w):
                    os.close(fd)
                theirs.close()
            reader, writer = await asyncio.open_unix_connection(sock=ctl)
            writer.write(request)
            writer.write_eof()
            try:
                line = await reader.readline()
            except ConnectionError:
                return None
            if not line.endswith(b"\n"):
                return None
            pid = int(line)
            outputs = [asyncio.StreamReader(limit=2**20) for _ in files]
            loop = asyncio.get_running_loop()
            for stream, file in zip(outputs, files, strict=True):
                pipe, _ = await loop.connect_read_pipe(functools.partial(asyncio.StreamReaderProtocol, stream), file)
                pipes.append(pipe)
            started = Started(pid, (reader, writer), outputs[0], outputs[1], pipes)
            writer = None
            return started
        finally:
            if writer is not None or not pipes:  # not started: nothing of it stays open or runs
                if pid is not None:  # still its own until the control socket closes: no stranger's
                    with contextlib.suppress(OSError):
                        os.killpg(pid, signal.SIGKILL)
                for item in (*pipes, *files, writer or ctl):
                    item.close()
