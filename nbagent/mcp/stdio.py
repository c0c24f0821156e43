"""A stdio transport that knows its child: pid, exit, and everything it started.

The SDK's ``stdio_client`` hides the process, and nbagent must (a) report a crashed server
at once, (b) prove at shutdown that nothing it started is still alive, not even a ``setsid``
or double-forked descendant (:mod:`nbagent.mcp.proctree`), and (c) pass a cleared environment
verbatim (the SDK merges its own defaults in). So the connection owns the process here and
speaks newline-delimited JSON-RPC over its pipes. By default the server runs under
:mod:`nbagent.mcp.launcher`, so its parent process holds no secret either, and in the OS
sandbox its policy describes (:mod:`nbagent.sandbox`).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import IO, Any

import anyio
import mcp_types as types
import pydantic_core
from anyio.abc import ObjectSendStream
from anyio.streams.memory import MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from nbagent import sandbox
from nbagent.mcp import proctree

STDIN_GRACE_SEC = 1.0
"""How long a server may take to exit by itself after its stdin closes (the spec's first step)."""
TERM_GRACE_SEC = 1.0
"""How long after SIGTERM before SIGKILL."""

REAP_SEC = 0.5
"""Bounded wait for killed processes to disappear (an init that never reaps makes it run out)."""

LAUNCHER = sandbox.LAUNCHER
"""The launcher every stdio server starts under (``nbagent/mcp/launcher.py``)."""

_POLL = 0.01
READ_CHUNK = 65536
MAX_LINE_BYTES = 256 * 1024 * 1024
"""A server that sends more than this without a newline is cut off: memory stays bounded."""


@dataclass
class ChildProcess:
    """What the connection knows about its server process."""

    pid: int
    tag: str | None = None
    """The marker in the server's environment (:data:`proctree.MARKER_VAR`)."""
    exited: anyio.Event = field(default_factory=anyio.Event)
    """Set when the server's stdout reaches EOF: it exited or closed its end."""
    process: asyncio.subprocess.Process | None = None
    hurry: bool = False
    """Skip the stdin grace period (a server that never finished starting is not reading it)."""
    swept: bool = False
    """A sweep found the server reaped and nothing of it left: later sweeps skip the /proc scan."""

    @property
    def returncode(self) -> int | None:
        return self.process.returncode if self.process is not None else None

    def sweep(self) -> set[int]:
        """SIGKILL the server and everything it started; a no-op once a sweep found nothing left."""
        if self.swept:
            return set()
        running = self.returncode is None
        killed = proctree.kill_all([self.pid] if running else [], self.pid, self.tag)
        kill_group(self.pid)
        self.swept = not running and not killed
        return killed


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    """Signal a whole process group, ignoring one that is already gone."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _wait_exit(process: asyncio.subprocess.Process, timeout: float) -> bool:
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(_POLL)
        return True
    return False


async def _wait_gone(pids: set[int], timeout: float) -> None:
    with anyio.move_on_after(timeout):
        while any(proctree.alive(pid) for pid in pids):
            await anyio.sleep(_POLL)


async def stop_process(child: ChildProcess, stdin_grace: float = STDIN_GRACE_SEC) -> None:
    """Close stdin, wait, SIGTERM all it started, wait, SIGKILL all it started. Every wait is bounded."""
    process = child.process
    assert process is not None
    if process.stdin is not None:
        with suppress(Exception):
            process.stdin.close()
    if not await _wait_exit(process, stdin_grace):
        running = [child.pid] if process.returncode is None else []
        proctree.terminate_all(running, child.pid, child.tag)
        kill_group(child.pid, signal.SIGTERM)
        await _wait_exit(process, TERM_GRACE_SEC)
    # Whatever is left (a server ignoring SIGTERM, what it or its children left behind) goes now.
    await _wait_gone(child.sweep(), REAP_SEC)
    with anyio.move_on_after(TERM_GRACE_SEC):
        await process.wait()
        # A reader that stopped early (a line over the cap) left the pipe unread: read it to its
        # end, so it closes while its event loop still runs.
        while child.exited.is_set() and process.stdout is not None and await process.stdout.read(READ_CHUNK):
            pass
    child.sweep()


def _argv(
    command: str, args: list[str], env: dict[str, str], cwd: str | None, launcher: bool, policy: sandbox.SandboxPolicy | None
) -> tuple[list[str], dict[str, str]]:
    """The server's command line and environment: under the launcher when asked (POSIX only),
    and always under it when ``policy`` is a sandbox.

    Under the launcher a missing command would only show as exit code 127, so it is looked up
    here first and reported as nbagent always did: ``FileNotFoundError``.
    """
    confined = policy is not None and policy.sandboxed
    if not (launcher or confined) or os.name != "posix":
        return [command, *args], env
    where = os.path.join(cwd or os.getcwd(), command) if os.sep in command else None
    found = shutil.which(where or command, path=env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(2, "command not found", command)
    full = policy or sandbox.SandboxPolicy(sandbox_mode="danger-full-access", workspace=cwd or os.getcwd())
    return sandbox.command(full, [command, *args], env)


def _parse(line: bytes) -> SessionMessage | Exception:
    """The line as a message. A reply that does not parse becomes an error answer to its request,
    so the call fails at once with the cause instead of waiting out its timeout; any other line
    that does not parse is an exception, which the session logs and drops."""
    try:
        return SessionMessage(_result_reply(line) or types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as exc:
        return _unreadable_reply(line, exc) or exc


_REPLY_KEYS = frozenset(("jsonrpc", "id", "result"))


def _result_reply(line: bytes) -> types.JSONRPCResponse | None:
    """The line as a result reply when it is plainly one (nearly every line a server sends):
    parsed once and checked as a reply alone, where the message union parses it and tries the
    request and notification shapes first (a page of a big ``tools/list`` took four times as
    long). ``None`` for anything else, and for a line this does not take, so that the union
    reads it and says what is wrong exactly as before."""
    try:
        value = pydantic_core.from_json(line)  # the parser the union's own ``validate_json`` uses
    except ValueError:
        return None
    if (
        type(value) is not dict
        or value.keys() != _REPLY_KEYS
        or value["jsonrpc"] != "2.0"
        or type(value["id"]) not in (int, str)
        or type(value["result"]) is not dict
    ):
        return None
    try:
        return types.JSONRPCResponse(jsonrpc="2.0", id=value["id"], result=value["result"])
    except ValueError:
        return None


def _unreadable_reply(line: bytes, exc: ValueError) -> SessionMessage | None:
    """A ``PARSE_ERROR`` answer to the request ``line`` replies to, saying why it could not be
    read; ``None`` when the line holds no reply whose id can be recovered."""
    reply = _reply_fields(line)
    if reply is None:
        return None
    message = f"the server sent a reply nbagent cannot read: {_why_unreadable(reply, exc)}"
    error = types.ErrorData(code=types.PARSE_ERROR, message=message)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=reply["id"], error=error))


def _reply_fields(line: bytes) -> dict[str, Any] | None:
    """The line decoded by the plain JSON parser (which reads deeper than the message parser,
    and gives up cleanly past Python's recursion limit) when it is a reply with a usable id. A
    request from the server is never answered here: its ids are the server's own, not ours."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or "method" in value or not ("result" in value or "error" in value):
        return None
    request_id = value.get("id")
    return value if isinstance(request_id, (str, int)) and not isinstance(request_id, bool) else None


def _why_unreadable(reply: dict[str, Any], exc: ValueError) -> str:
    """The cause in a few words: too deep, or the first problem with the reply's shape."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    errors = exc.errors(include_url=False)
    if any("recursion limit" in error["msg"] for error in errors):
        return "it is nested too deep"
    shape = "JSONRPCResponse" if "result" in reply else "JSONRPCError"
    first = next((e for e in errors if e["loc"][:1] == (shape,)), errors[0])
    where = ".".join(map(str, first["loc"][1:]))
    return f"{where}: {first['msg']}" if where else first["msg"]


class _StdinSender(ObjectSendStream[SessionMessage]):
    """The session's write stream: each message goes to the server's stdin as it is sent.

    A writer task behind a memory stream would cost every request two task switches more; a
    write here is whole at once (the pipe's transport buffers it), so concurrent senders never
    interleave and their order is kept. It goes to asyncio's pipe writer itself: anyio's byte
    stream over it gives the event loop a whole pass after every write (measured: about a fifth
    of the connection's CPU per call). When the server stops reading, the session's read side
    ends (so no request waits for an answer that cannot come) and later sends fail, as they
    would on a closed stream."""

    def __init__(self, stdin: asyncio.StreamWriter, on_broken: Callable[[], Awaitable[None]]) -> None:
        self._stdin = stdin
        self._on_broken = on_broken
        self._closed = False
        self._broken = False

    async def send(self, item: SessionMessage) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._broken:
            raise anyio.BrokenResourceError
        data = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
        try:
            self._stdin.write(data.encode("utf-8"))
            await self._stdin.drain()  # waits only while the pipe is full
        except (OSError, RuntimeError):  # a pipe the server closed (RuntimeError: a closed transport)
            self._broken = True
            await self._on_broken()

    def close(self) -> None:
        self._closed = True

    async def aclose(self) -> None:
        self.close()


async def _deliver(
    stream: MemoryObjectSendStream[SessionMessage | Exception], message: SessionMessage | Exception
) -> None:
    """Hand a message straight to a waiting reader, else wait for one. ``send`` alone first yields
    to the event loop once, a whole loop pass per message; the read of the next chunk yields
    anyway, and a reader that is not waiting still makes this wait."""
    try:
        stream.send_nowait(message)
    except anyio.WouldBlock:
        await stream.send(message)


@asynccontextmanager
async def stdio_transport(
    command: str,
    args: list[str],
    *,
    env: dict[str, str],
    cwd: str | None,
    errlog: IO[str],
    child: list[ChildProcess],
    launcher: bool = True,
    policy: sandbox.SandboxPolicy | None = None,
    read_hook: Callable[[SessionMessage | Exception], bool] | None = None,
) -> AsyncIterator[tuple[anyio.abc.ObjectReceiveStream, anyio.abc.ObjectSendStream]]:
    """Spawn the server in its own session (process group), in ``policy``'s sandbox, and yield
    the message streams.

    ``child`` receives the :class:`ChildProcess` as soon as the spawn succeeds, so the owner can
    kill what it started even if everything after the spawn fails. ``read_hook`` sees every
    message in the order it was read, in the reading task; one it returns ``True`` for goes no
    further (a reply the direct ``tools/call`` lane waits for: no hand-over to the SDK's task).
    """
    tag = proctree.new_tag()
    env = {**env, proctree.MARKER_VAR: tag}
    argv, env = _argv(command, args, env, cwd, launcher, policy)
    process = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=errlog, env=env, cwd=cwd,
        start_new_session=True,
    )
    info = ChildProcess(pid=process.pid, tag=tag, process=process)
    child.append(info)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    assert process.stdin is not None
    write_send = _StdinSender(process.stdin, read_send.aclose)

    async def reader() -> None:
        stdout = process.stdout
        assert stdout is not None
        buffer = bytearray()
        try:
            async with read_send:
                while chunk := await stdout.read(READ_CHUNK):
                    # Only the new chunk is searched for a newline: a many-megabyte line costs
                    # time linear in its size, not quadratic.
                    if b"\n" not in chunk:
                        buffer += chunk
                        if len(buffer) > MAX_LINE_BYTES:
                            cut = ValueError(f"the server sent over {MAX_LINE_BYTES} bytes without a newline; disconnected")
                            if read_hook is None or not read_hook(cut):
                                await read_send.send(cut)
                            return
                        continue
                    *lines, rest = chunk.split(b"\n")
                    lines[0] = bytes(buffer) + lines[0]
                    buffer = bytearray(rest)
                    for line in lines:
                        if line.strip():
                            message = _parse(line)
                            if read_hook is None or not read_hook(message):
                                await _deliver(read_send, message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            pass
        finally:
            info.exited.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            try:
                yield read_recv, write_send
            finally:
                with anyio.CancelScope(shield=True):
                    write_send.close()
                    read_recv.close()
                    await stop_process(info, 0.0 if info.hurry else STDIN_GRACE_SEC)
                tg.cancel_scope.cancel()
    finally:
        info.sweep()
