"""One writer per thread across processes: an OS lock on ``<rollout>.lock``, naming its holder.

Two processes appending to one rollout interleave their lines, and the second, seeing the
first's live turn, records it as aborted. ``flock`` is held by an open file, so the OS drops it
when its process dies (a crash never leaves a thread locked). The file holds the holder's pid for
the refusal message; it is removed on release, and a waiter that locked a file removed meanwhile
tries again on the new one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

__all__ = ["LOCK_WAIT_SEC", "ThreadBusy", "ThreadLock"]

LOCK_WAIT_SEC = 5.0
"""How long a second writer waits for the first to finish its turn before it is refused."""
_POLL_SEC = 0.05


class ThreadBusy(BlockingIOError):
    """Another process is writing this thread."""


class ThreadLock:
    """Held from ``acquire`` until ``release``; ``path`` is the rollout it guards."""

    def __init__(self, path: Path, thread_id: str) -> None:
        self.path = Path(f"{path}.lock")
        self.thread_id = thread_id
        self._fd: int | None = None

    def acquire(self, wait: float = LOCK_WAIT_SEC) -> ThreadLock:
        """Wait up to ``wait`` seconds; raises ``ThreadBusy`` naming the holder's pid."""
        deadline = time.monotonic() + wait
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_pid(fd)
                os.close(fd)
                if time.monotonic() >= deadline:
                    who = f"pid {holder}" if holder else "a process that has not said its pid yet"
                    raise ThreadBusy(
                        f"thread {self.thread_id} is being written by another nbagent process ({who}); "
                        "try again when its turn has ended"
                    ) from None
                time.sleep(_POLL_SEC)
                continue
            if _same_file(fd, self.path):
                break
            os.close(fd)  # the holder removed it as we locked it: lock the current one
        self._fd = fd
        with contextlib.suppress(OSError):  # a full disk costs the pid in a refusal, nothing more
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return self

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()
        os.close(self._fd)
        self._fd = None


def _same_file(fd: int, path: Path) -> bool:
    try:
        on_disk, held = os.stat(path), os.fstat(fd)
        return (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)
    except FileNotFoundError:
        return False


def _read_pid(fd: int) -> int | None:
    try:
        return int(os.pread(fd, 32, 0).split()[0])
    except (OSError, ValueError, IndexError):
        return None
