"""Keep a stdio server's signals and ``ptrace`` inside its own process tree (Linux Landlock).

A server runs as the user, so without this it may SIGKILL its launcher: its orphans then go to
init, out of every net :mod:`nbagent.mcp.proctree` casts. A Landlock domain scoped to signals
(ABI 6, Linux 6.12) lets the server and everything it starts signal one another but no process
outside (the launcher, nbagent, the user's other programs); any Landlock domain also refuses
``ptrace`` access to outside processes, which covers ``/proc/PID/mem`` and, for a server that is
not root, ``/proc/PID/environ``. Nothing of the file system or the network is restricted.

Standard library only (``ctypes``): the launcher imports it by path under ``python -I -S``.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import struct
import sys

_CREATE_RULESET = 444
_RESTRICT_SELF = 446
"""Syscall numbers, the same on every architecture Landlock runs on (the unified table)."""
_CREATE_RULESET_VERSION = 1 << 0
_SCOPE_SIGNAL = 1 << 1
_SCOPE_ABI = 6
_PR_SET_NO_NEW_PRIVS = 38


@functools.cache  # once per process: a fork of the fork server finds it loaded
def _libc() -> ctypes.CDLL | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        return libc
    except (OSError, AttributeError):
        return None


def abi() -> int:
    """The kernel's Landlock ABI version; 0 where there is none (not Linux, too old, disabled)."""
    libc = _libc()
    if libc is None or not sys.platform.startswith("linux"):
        return 0
    return max(0, libc.syscall(_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION))


def scope_signals() -> bool:
    """Put the calling (single-threaded) process in a domain that only scopes signals.

    The kernel asks for ``no_new_privs`` unless the caller has CAP_SYS_ADMIN, so a server that
    is not root runs with it: a setuid program it starts (``sudo``) gains no privilege.
    Returns whether the domain is in force; ``False`` leaves the process as it was.
    """
    libc = _libc()
    if libc is None or abi() < _SCOPE_ABI:
        return False
    attr = struct.pack("=QQQ", 0, 0, _SCOPE_SIGNAL)  # handled_access_fs, handled_access_net, scoped
    fd = libc.syscall(_CREATE_RULESET, ctypes.c_char_p(attr), len(attr), 0)
    if fd < 0:
        return False
    try:
        if libc.syscall(_RESTRICT_SELF, fd, 0) == 0:
            return True
        if ctypes.get_errno() != errno.EPERM:
            return False
        libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        return bool(libc.syscall(_RESTRICT_SELF, fd, 0) == 0)
    finally:
        os.close(fd)
