"""The rollout: one append-only JSONL file per thread, the replayable facts of that thread.

Each line is one ``RolloutLine`` written whole on an unbuffered file (a short write is continued,
a failed one cut back), so a line that was confirmed is in the OS page cache and survives a
SIGKILL of the process. No fsync per line: a power cut may lose the tail, which the reader
tolerates (torn last line).
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import ValidationError

from nbagent.gcpause import gc_paused
from nbagent.protocol import unicode_text
from nbagent.protocol.rollout import RolloutLine, RolloutLineAdapter
from nbagent.secrets import Redactor, process_secrets, process_secrets_version

__all__ = ["RolloutWriteError", "RolloutWriter", "read_rollout", "write_whole"]

log = logging.getLogger(__name__)


class RolloutWriteError(OSError):
    """A line could not be written (full disk, I/O error); no part of it is left in the file."""

    def __init__(self, path: Path, cause: OSError) -> None:
        super().__init__(cause.errno, f"cannot write to {path}: {cause.strerror or cause}")

    def __str__(self) -> str:
        return str(self.strerror)


class RolloutWriter:
    """Appends lines to one thread's rollout; every ``append`` is on disk (page cache) on return.

    ``on_line`` is told of every appended line as written (redacted) with its bytes, which lets
    the index keep its counters without re-reading the file; it must be cheap and never raise.
    Secrets are the caller's plus the process's own (``add_process_secret``), including those
    added after the writer was opened.
    """

    def __init__(
        self,
        path: Path,
        secrets: Iterable[str] = (),
        *,
        on_line: Callable[[RolloutLine, bytes], None] | None = None,
        on_close: Callable[[], None] | None = None,
        create: bool = False,
    ) -> None:
        self.path = Path(path)
        self._secrets = list(secrets)
        self._secrets_version = -1
        self._redactor = Redactor()
        self._on_line = on_line
        self._on_close = on_close
        self.path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | (os.O_EXCL if create else 0)
        self._fd: int | None = _open_nofollow(self.path, flags)
        if not create:
            try:
                self._terminate_torn_tail()
            except OSError:
                self.close()
                raise

    def add_secrets(self, values: Iterable[str]) -> None:
        """Hide these too from the next line on (a variable named like a secret set after the
        thread opened); what was hidden stays hidden."""
        new = [value for value in values if value not in self._secrets]
        if new:
            self._secrets += new
            self._secrets_version = -1

    @property
    def redactor(self) -> Redactor:
        version = process_secrets_version()
        if version != self._secrets_version:
            self._redactor = Redactor([*self._secrets, *process_secrets()])
            self._secrets_version = version
        return self._redactor

    def _terminate_torn_tail(self) -> None:
        """Keep a torn last line (from a crash) on its own line, so the next append is intact."""
        size = os.fstat(self._fd).st_size  # type: ignore[arg-type]  # called only while the file is open
        if size == 0:
            return
        with open(self.path, "rb") as f:
            f.seek(size - 1)
            if f.read(1) != b"\n":
                self._write_all(b"\n")

    def _write_all(self, data: bytes) -> None:
        assert self._fd is not None
        try:
            write_whole(self._fd, data)
        except OSError as exc:
            raise RolloutWriteError(self.path, exc) from exc

    @property
    def closed(self) -> bool:
        return self._fd is None

    def append(self, line: RolloutLine) -> RolloutLine:
        """Serialize, redact and write one line; flushed to the OS before returning. Returns the
        line as written: ``line`` itself unless a secret was redacted from it.

        Raises ``RolloutWriteError`` (an ``OSError``) when the line could not be written whole.
        """
        if self._fd is None:
            raise ValueError(f"rollout writer for {self.path} is closed")
        raw = line.__pydantic_serializer__.to_json(line)
        data = self.redactor.line(raw)
        self._write_all(data + b"\n")
        if data is not raw:  # what the file holds: redacted values
            line = RolloutLineAdapter.validate_json(data)
        if self._on_line is not None:
            try:
                self._on_line(line, data)
            except Exception:  # the line is written; bookkeeping must not turn that into a failure
                log.exception("rollout line hook failed for %s", self.path)
        return line

    def close(self) -> None:
        if self._fd is None:
            return
        os.close(self._fd)
        self._fd = None
        if self._on_close is not None:
            self._on_close()

    def __enter__(self) -> RolloutWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_whole(fd: int, data: bytes) -> None:
    """All of ``data`` or none of it on the append-only ``fd``: a short write is continued, a
    failed one cut back, so a full disk never leaves half a line for the next append to glue onto."""
    done = 0
    try:
        done = os.write(fd, data)  # nearly always whole at once
        if done == len(data):
            return
        view = memoryview(data)
        while done < len(data):
            n = os.write(fd, view[done:])
            if n <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            done += n
    except OSError:
        if done:
            with contextlib.suppress(OSError):  # not a regular file: nothing to cut back
                os.ftruncate(fd, os.fstat(fd).st_size - done)
        raise


def _open_nofollow(path: Path, flags: int) -> int:
    """``os.open`` that never goes through a link at the rollout's own name: a link there could
    make one thread's history another's (or a file outside the home), so it is refused by name."""
    try:
        return os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, "a rollout is a regular file, not a symbolic link", str(path)) from None
        raise


def read_rollout(path: Path | str) -> tuple[list[RolloutLine], list[str]]:
    """Read every valid line; invalid ones are skipped with a warning naming file and line.
    A symbolic link is refused (``OSError``), not followed.

    A crash may leave a torn last line and a hand edit may leave garbage anywhere: neither is
    fatal, because the rest of the file is still the facts of the thread.
    """
    path = Path(path)
    fd = _open_nofollow(path, os.O_RDONLY | os.O_NOFOLLOW)
    with open(fd, "rb") as f:
        data = f.read()
    raw = data.split(b"\n")
    if raw and raw[-1] == b"":
        raw.pop()
    lines: list[RolloutLine] = []
    warnings: list[str] = []
    append = lines.append
    validate = RolloutLineAdapter.validator.validate_json  # the adapter's wrapper adds ~1 µs a line
    with gc_paused():
        for n, chunk in enumerate(raw, 1):
            try:
                append(validate(chunk))
            except ValidationError as e:
                if (line := _as_unicode_text(chunk, e)) is not None:
                    append(line)
                elif chunk.strip():  # a blank line is no record: skipped without a word
                    warnings.append(_skipped(path, n, e, torn=n == len(raw) and not data.endswith(b"\n")))
    return lines, warnings


def _as_unicode_text(chunk: bytes, error: ValidationError) -> RolloutLine | None:
    """A line whose JSON holds text that is not Unicode (a lone surrogate, as an escape or as
    bytes; bytes that are no UTF-8), read with U+FFFD in its place as model output is read now;
    ``None`` when that is not its only fault. Another program or an older nbagent may have
    written one, and skipping the line would lose a call or a reply with it."""
    if not any(e["type"] == "json_invalid" for e in error.errors()):
        return None
    try:
        text = json.dumps(json.loads(chunk.decode("utf-8", "replace")), ensure_ascii=False)
        return RolloutLineAdapter.validate_json(unicode_text(text))
    except (ValueError, RecursionError):  # ``ValidationError`` is one: the line has another fault
        return None


def _skipped(path: Path, n: int, error: ValidationError, *, torn: bool) -> str:
    what = "torn last line" if torn else "invalid line"
    errors = error.errors()
    reason = (errors[0].get("msg", str(error)) if errors else str(error)).splitlines()[0]
    return f"{path}:{n}: skipped {what} ({reason})"
