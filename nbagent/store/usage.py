"""The user's tokens per UTC day: ``usage/YYYY-MM-DD.json`` in the nbagent home, one small JSON
object of Codex's ``TokenUsage`` counts per day, for ``%agent`` to show and a daily cap to read.

Two kernels of the same user add to the same day: each addition reads, adds and rewrites the
file while holding an exclusive ``flock`` on it, so no addition is lost. The folder is the
user's own (0700, files 0600), as the rollouts are; a file that is not a day's counts is an
error naming it, never read as zero.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from pathlib import Path

from pydantic import ValidationError

from nbagent.protocol import TokenUsage

__all__ = ["LedgerError", "UsageLedger", "utc_day"]

_MAX_BYTES = 4096
"""A day's counts are a hundred bytes; anything far larger is not one."""


class LedgerError(OSError):
    """The day's file cannot be read or written; the message names it."""

    def __str__(self) -> str:
        return f"token usage ledger {self.filename}: {self.strerror}"


def utc_day(at: float | None = None) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(time.time() if at is None else at))


class UsageLedger:
    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def path_for(self, day: str) -> Path:
        return self.folder / f"{day}.json"

    def day(self, at: float | None = None) -> TokenUsage:
        """The counts of the UTC day of ``at`` (now): none when nothing was used that day."""
        path = self.path_for(utc_day(at))
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return TokenUsage()
        except OSError as exc:
            raise _error(path, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            return _parse(path, os.pread(fd, _MAX_BYTES + 1, 0))
        finally:
            os.close(fd)

    def add(self, usage: TokenUsage, at: float | None = None) -> TokenUsage:
        """Add ``usage`` to its day's counts; returns the day's new counts."""
        path = self.path_for(utc_day(at))
        try:
            fd = self._open(path)
        except FileNotFoundError:
            self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = self._open(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            total = _parse(path, os.pread(fd, _MAX_BYTES + 1, 0)) + usage
            data = total.model_dump_json().encode()
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
            return total
        except OSError as exc:
            raise _error(path, exc) from None
        finally:
            os.close(fd)

    @staticmethod
    def _open(path: Path) -> int:
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise _error(path, exc) from None


def _parse(path: Path, data: bytes) -> TokenUsage:
    if not data:
        return TokenUsage()
    try:
        if len(data) > _MAX_BYTES:
            raise ValueError("too large")
        return TokenUsage.model_validate(json.loads(data))
    except (ValueError, ValidationError):
        raise LedgerError(
            errno.EINVAL, "not a day's token counts (remove it to count the day again from zero)", str(path)
        ) from None


def _error(path: Path, exc: OSError) -> LedgerError:
    if isinstance(exc, LedgerError):
        return exc
    why = "a symbolic link, not a file" if exc.errno == errno.ELOOP else exc.strerror or str(exc)
    return LedgerError(exc.errno or errno.EIO, why, str(path))
