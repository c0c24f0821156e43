"""Find and kill every process a stdio server started, including the ones that tried to leave.

Three nets, because each one alone has a hole: the process group (a ``setsid`` child leaves it),
the parent chain under a live root (an orphan is re-parented away from it, unless the launcher
holds it as child subreaper), and a random marker in the environment every descendant inherits
(found in ``/proc/*/environ``; a process that drops its environment loses it). Everything found
is stopped first, then rescanned until nothing new turns up, then killed: a stopped process
cannot fork a new one in between.

Linux ``/proc`` only; elsewhere the scans find nothing and the process group is all there is.
Standard library only: the launcher runs next to this file under ``python -I -S``.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterable

MARKER_VAR = "NBAGENT_SESSION"
"""Set to a fresh random tag in each server's environment; descendants inherit it."""

FREEZE_ROUNDS = 50
"""Rescans while freezing: a fork bomb cannot keep the sweep running for ever."""

_PROC = "/proc"


def new_tag() -> str:
    import secrets  # here, not at the top: the launcher imports this module and never calls it

    return secrets.token_hex(16)


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir(_PROC) if name.isdigit()]
    except OSError:
        return []


def _stat(pid: int) -> tuple[int, int] | None:
    """``(ppid, pgid)`` of a live process; ``None`` for a zombie or one that is gone."""
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in (b"Z", b"X"):
        return None
    return int(fields[1]), int(fields[2])


def alive(pid: int) -> bool:
    """Whether ``pid`` is a process that still runs (a zombie has finished)."""
    return _stat(pid) is not None


def _has_marker(pid: int, needle: bytes) -> bool:
    try:
        with open(f"{_PROC}/{pid}/environ", "rb") as fh:
            return needle in b"\0" + fh.read()
    except OSError:
        return False


def collect(roots: Iterable[int], pgid: int | None, tag: str | None) -> set[int]:
    """Live processes under ``roots`` (by parent chain), in group ``pgid``, or carrying ``tag``.

    ``roots`` must be processes still alive (a reaped pid may already belong to someone else);
    a group id and a 128-bit tag cannot be mistaken for another program's.
    """
    stats = {pid: st for pid in _pids() if (st := _stat(pid)) is not None}
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    found = {pid for pid in roots if pid in stats}
    stack = list(found)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    if pgid is not None:
        found.update(pid for pid, (_, group) in stats.items() if group == pgid)
    if tag:
        needle = f"\0{MARKER_VAR}={tag}\0".encode()
        found.update(pid for pid in stats if pid not in found and _has_marker(pid, needle))
    found.discard(os.getpid())
    return found


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_all(roots: Iterable[int], pgid: int | None, tag: str | None) -> set[int]:
    """Freeze everything :func:`collect` finds until a rescan finds nothing new, then SIGKILL it."""
    roots = list(roots)
    stopped: set[int] = set()
    for _ in range(FREEZE_ROUNDS):
        new = collect(roots, pgid, tag) - stopped
        if not new:
            break
        for pid in new:
            _signal(pid, signal.SIGSTOP)
        stopped |= new
    for pid in stopped:
        _signal(pid, signal.SIGKILL)
    return stopped


def terminate_all(roots: Iterable[int], pgid: int | None, tag: str | None) -> set[int]:
    """SIGTERM everything found (the polite step before :func:`kill_all`); returns what was found."""
    found = collect(roots, pgid, tag)
    for pid in found:
        _signal(pid, signal.SIGTERM)
    return found
