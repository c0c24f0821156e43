"""The audit log: one JSON object per line, a file per UTC day (``YYYY-MM-DD.jsonl``) in a
folder of the user's own (mode 0700, files 0600), for an administrator to collect.

Each line is written whole, in one ``write`` on an append-only descriptor (``write_whole``, as
the rollout writes), so lines of two sessions of the same user never interleave and a line once
written survives a SIGKILL. The day's file stays open for ``REOPEN_AFTER_SEC`` after it was opened
(opening and closing it per line cost as much as the rest of a line), so a file moved or deleted
while open gets at most that long's lines before the next line makes a new one. What goes in a line is the caller's: never arguments, output or
answers, only names, decisions and timings.
"""

from __future__ import annotations

import errno
import os
import time
import weakref
from pathlib import Path
from typing import Any

from pydantic_core import to_json

from nbagent.store.rollout import write_whole

__all__ = ["AuditLog"]

REOPEN_AFTER_SEC = 1.0
"""How long the day's file is written through one descriptor before it is opened again by name."""


def _encode(record: dict[str, Any]) -> bytes:
    """One compact UTF-8 JSON line, as ``json.dumps(separators=(",", ":"), ensure_ascii=False,
    default=str)`` writes it for a line's values (names, ids, numbers, lists of names), at a
    third of its cost: pydantic's encoder, in Rust, already loaded."""
    return to_json(record, fallback=str)


class AuditLog:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._day: tuple[int, str] | None = None
        """The last line's UTC day (POSIX days since the epoch) and its file: a path is made once a day."""
        self._open_day: tuple[str, int, float] | None = None
        """The file written last, its descriptor and when it was opened (``_clock``)."""
        self._closer: weakref.finalize[Any, Any] | None = None
        self._clock = time.monotonic

    def path_for(self, at: float) -> Path:
        return Path(self._path(at))

    def _path(self, at: float) -> str:
        day = int(at // 86400)
        if self._day is None or self._day[0] != day:
            self._day = (day, os.path.join(self.folder, time.strftime("%Y-%m-%d", time.gmtime(at)) + ".jsonl"))
        return self._day[1]

    def write(self, record: dict[str, Any], at: float | None = None) -> None:
        """Append ``record`` (JSON-able) as one line to the day's file; raises ``OSError``."""
        self.write_many([record], at)

    def write_many(self, records: list[dict[str, Any]], at: float | None = None) -> None:
        """Append ``records`` as lines in one write (a call's decision and result together). The
        folder is made (0700) when the file cannot be opened for want of it, not per line."""
        at = time.time() if at is None else at
        line = b"".join([_encode(r) + b"\n" for r in records])
        path = self._path(at)
        fd = self._fd_for(path)
        try:
            write_whole(fd, line)
        except OSError:
            self.close()  # opened again for the next line
            raise

    def _fd_for(self, path: str) -> int:
        now = self._clock()
        if (kept := self._open_day) is not None and kept[0] == path and now - kept[2] < REOPEN_AFTER_SEC:
            return kept[1]
        self.close()
        try:
            fd = self._open(path)
        except FileNotFoundError:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = self._open(path)
        self._open_day = (path, fd, now)
        self._closer = weakref.finalize(self, os.close, fd)
        return fd

    def close(self) -> None:
        """Close the day's file (the next line opens it again); a log dropped unclosed closes it."""
        self._open_day = None
        if self._closer is not None:
            self._closer()
            self._closer = None

    @staticmethod
    def _open(path: str) -> int:
        try:
            return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise OSError(errno.ELOOP, "an audit log is a regular file, not a symbolic link", path) from None
            raise
