"""The audit log: one JSON object per line, a file per UTC day (``YYYY-MM-DD.jsonl``) in a
folder of the user's own (mode 0700, files 0600), for an administrator to collect.

Each line is written whole on an append-only file opened for that line (``write_whole``, as the
rollout writes), so lines of two sessions of the same user never interleave and a line once
written survives a SIGKILL. What goes in a line is the caller's: never arguments, output or
answers, only names, decisions and timings.
"""

from __future__ import annotations

import errno
import json
import os
import time
from pathlib import Path
from typing import Any

from nbagent.store.rollout import write_whole

__all__ = ["AuditLog"]

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
"""One encoder for every line: ``json.dumps`` given options builds a new one per call."""


class AuditLog:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._day: tuple[str, str] | None = None
        """The last line's UTC day and its file: a call writes two lines, a path is made once a day."""

    def path_for(self, at: float) -> Path:
        return Path(self._path(at))

    def _path(self, at: float) -> str:
        day = time.strftime("%Y-%m-%d", time.gmtime(at))
        if self._day is None or self._day[0] != day:
            self._day = (day, os.path.join(self.folder, day + ".jsonl"))
        return self._day[1]

    def write(self, record: dict[str, Any], at: float | None = None) -> None:
        """Append ``record`` (JSON-able) as one line to the day's file; raises ``OSError``."""
        self.write_many([record], at)

    def write_many(self, records: list[dict[str, Any]], at: float | None = None) -> None:
        """Append ``records`` as lines in one write (a call's decision and result together). The
        folder is made (0700) when the file cannot be opened for want of it, not per line."""
        at = time.time() if at is None else at
        line = "".join(_encode(r) + "\n" for r in records)
        path = self._path(at)
        try:
            fd = self._open(path)
        except FileNotFoundError:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = self._open(path)
        try:
            write_whole(fd, line.encode("utf-8"))
        finally:
            os.close(fd)

    @staticmethod
    def _open(path: str) -> int:
        try:
            return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise OSError(errno.ELOOP, "an audit log is a regular file, not a symbolic link", path) from None
            raise
