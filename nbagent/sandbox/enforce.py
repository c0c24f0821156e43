"""Put the calling process into the sandbox a plan describes, with the kernel's own means.

The launcher (:mod:`nbagent.mcp.launcher`) calls these in order, in itself and the processes it forks:

1. :func:`enter_namespaces` (the launcher): new user, mount and PID namespaces, and a network
   namespace unless the plan allows the network; then, in the new mount namespace, ``.git``
   folders bound read-only, deny-read paths masked (an empty read-only tmpfs over a folder,
   ``/dev/null`` over a file) and a private ``/dev/shm``.
2. :func:`mount_proc` (process 1 of the new PID namespace): a ``/proc`` that shows only the
   sandbox's own processes, so no ``/proc/PID/environ`` of nbagent is there to read.
3. :func:`restrict` (the server, just before ``exec``): a Landlock ruleset that allows writes
   only under the write roots (reads and execution stay allowed everywhere the mounts let them)
   and keeps signals and abstract Unix sockets inside the sandbox (ABI 6).

Landlock can only allow, never subtract, so what must be unreadable or read-only inside a
writable folder is the mount namespace's job. Every step raises :class:`SandboxError` naming
what failed; the launcher then exits without starting the server (never a silent downgrade).

A plan is a plain dict (it travels as JSON on the launcher's command line):
``write`` (write roots), ``readonly`` (paths bound read-only), ``deny`` (paths masked),
``expose`` (paths under a mask that stay visible, e.g. a write root inside nbagent's home)
and ``network`` (bool).

Standard library only, and no nbagent import: the launcher imports it by path under ``-I -S``.
Run as a script (``python -I -S enforce.py probe``) it prints what this system lacks, one line
each, and exits 0 when nothing is missing.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import struct
import sys

TYPE_CHECKING = False  # what type checkers read as True: importing typing costs the launcher's start
if TYPE_CHECKING:
    from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

# Landlock file-system rights (ABI 1 unless noted).
_WRITE_FILE = 1 << 1
_REMOVE_DIR, _REMOVE_FILE = 1 << 4, 1 << 5
_MAKE = sum(1 << bit for bit in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
_REFER = 1 << 13  # ABI 2
_TRUNCATE = 1 << 14  # ABI 3
_FILE_RIGHTS = _WRITE_FILE | _TRUNCATE
"""The write rights a rule on a single file (not a folder) may carry."""
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx")
"""Device files a program may write to whatever the plan says."""
DEVICE_DIRS = ("/dev/pts", "/dev/shm")


class SandboxError(Exception):
    """A step of entering the sandbox failed; the server must not start."""


@functools.cache  # once per process: a fork of the fork server finds it loaded
def _libc() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    return libc


def _fail(what: str) -> SandboxError:
    err = ctypes.get_errno()
    return SandboxError(f"{what}: {os.strerror(err)}")


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where there is none."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        return max(0, int(_libc().syscall(_CREATE_RULESET, None, 0, 1)))
    except (OSError, AttributeError):
        return 0


def _mount(libc: Any, source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = [None if v is None else os.fsencode(v) for v in (source, target, fstype, data)]
    if libc.mount(enc[0], enc[1], enc[2], flags, enc[3]) != 0:
        raise _fail(f"mount {target}")


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def enter_namespaces(plan: dict[str, Any]) -> None:
    """New user, mount, PID (and network) namespaces, with the plan's mounts in place.

    The next process this one forks is process 1 of the new PID namespace.
    """
    libc = _libc()
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | (0 if plan.get("network") else CLONE_NEWNET)
    if libc.unshare(flags) != 0:
        raise _fail("unshare (user, mount, PID and network namespaces)")
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    except OSError as exc:
        raise SandboxError(f"user namespace id maps: {exc.strerror}") from None
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    for path in plan.get("readonly", ()):
        if os.path.isdir(path):
            _mount(libc, path, path, None, MS_BIND | MS_REC)
            _mount(libc, None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY)
    _mask(libc, list(plan.get("deny", ())), list(plan.get("expose", ())))
    if os.path.isdir("/dev/shm"):
        _mount(libc, "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")


def _mask(libc: Any, deny: list[str], expose: list[str]) -> None:
    """An empty read-only tmpfs over each denied folder and ``/dev/null`` over each denied file;
    a path in ``expose`` under a mask is bound back in (opened before the mask hides it)."""
    kept = {path: (os.open(path, os.O_PATH), os.path.isdir(path)) for path in expose if os.path.exists(path)}
    for path in deny:
        if os.path.isdir(path):
            inside = [p for p in kept if p.startswith(path.rstrip("/") + "/")]
            _mount(libc, "tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700,size=16k")
            for sub in inside:
                fd, is_dir = kept[sub]
                os.makedirs(sub if is_dir else os.path.dirname(sub), exist_ok=True)
                if not is_dir:
                    open(sub, "a").close()
                _mount(libc, f"/proc/self/fd/{fd}", sub, None, MS_BIND | MS_REC)
            _mount(libc, None, path, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
        elif os.path.exists(path):
            _mount(libc, "/dev/null", path, None, MS_BIND)
    for fd, _ in kept.values():
        os.close(fd)


def mount_proc() -> None:
    """A ``/proc`` of the new PID namespace (called in its process 1)."""
    _mount(_libc(), "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def restrict(plan: dict[str, Any]) -> None:
    """Landlock: writes only under the plan's write roots; signals and abstract Unix sockets
    only within the sandbox (ABI 6). Raises when the ruleset cannot be put in force."""
    libc = _libc()
    abi = landlock_abi()
    if abi < 1:
        raise SandboxError("Landlock is not available in this kernel")
    handled = _WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE
    handled |= (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("=QQQ", handled, 0, scoped) if abi >= 6 else struct.pack("=Q", handled)
    ruleset = libc.syscall(_CREATE_RULESET, ctypes.c_char_p(attr), len(attr), 0)
    if ruleset < 0:
        raise _fail("Landlock ruleset")
    try:
        for path in [*plan.get("write", ()), *DEVICES, *DEVICE_DIRS]:
            _allow(libc, ruleset, path, handled)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _fail("no_new_privs")
        if libc.syscall(_RESTRICT_SELF, ruleset, 0) != 0:
            raise _fail("Landlock restrict_self")
    finally:
        os.close(ruleset)


def _allow(libc: Any, ruleset: int, path: str, handled: int) -> None:
    """Allow the handled write rights beneath ``path`` (only a file's own rights on a file)."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # nothing there to write to
    try:
        rights = handled if os.path.isdir(path) else handled & _FILE_RIGHTS
        rule = struct.pack("=Qi", rights, fd)
        if libc.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.c_char_p(rule), 0) != 0:
            raise _fail(f"Landlock rule for {path}")
    finally:
        os.close(fd)


def missing() -> list[str]:
    """What this system lacks for the sandbox, one phrase each (empty: nothing)."""
    found: list[str] = []
    if landlock_abi() < 1:
        found.append("Landlock (Linux 5.13 or later, with landlock in the kernel's lsm= list)")
    if not sys.platform.startswith("linux"):
        return ["Linux (the sandbox uses Landlock and Linux namespaces)"]
    pid = os.fork()
    if pid == 0:  # a child tries, so this process keeps its namespaces
        code = 0
        try:
            if _libc().unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET) != 0:
                code = ctypes.get_errno() or errno.EPERM
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code:
        reason = os.strerror(code) if code > 0 else "killed"
        found.append(f"unprivileged user namespaces (unshare: {reason})")
    return found


if __name__ == "__main__" and sys.argv[1:] == ["probe"]:
    lacks = missing()
    print("\n".join(lacks))
    sys.exit(1 if lacks else 0)
