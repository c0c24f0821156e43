"""The rollout: one append-only JSONL file per thread, the replayable facts of that thread.

Each line is one ``RolloutLine`` written with a single ``write`` on an unbuffered file, so a
line that was confirmed is in the OS page cache and survives a SIGKILL of the process. No
fsync per line: a power cut may lose the tail, which the reader tolerates (torn last line).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

from nbagent.protocol.items import Item
from nbagent.protocol.rollout import ItemRecord, RolloutLine, RolloutLineAdapter

__all__ = ["REDACTED", "MIN_SECRET_LEN", "Redactor", "RolloutWriter", "read_rollout"]

log = logging.getLogger(__name__)

REDACTED = "[redacted]"
MIN_SECRET_LEN = 4
"""Shorter strings are ignored: redacting ``"a"`` or ``"1"`` would mangle every line."""


class Redactor:
    """Replaces every occurrence of a secret in a serialized line by ``[redacted]``.

    A byte-level replace is cheap and catches secrets anywhere (values, keys, nested JSON
    strings). A secret may appear in its JSON-escaped form, so both forms are searched. If a
    replace breaks the line (a secret equal to a field value such as ``"item"``), the line is
    redacted value by value instead; a secret is never written, even at the cost of validity.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        texts = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LEN}
        forms: set[bytes] = set()
        for s in texts:
            forms.add(s.encode())
            forms.add(json.dumps(s)[1:-1].encode())
            forms.add(json.dumps(s, ensure_ascii=False)[1:-1].encode())
        # Longest first, so a secret containing another is removed whole.
        self._forms: list[bytes] = sorted(forms, key=len, reverse=True)
        self._texts: list[str] = sorted(texts, key=len, reverse=True)

    def __bool__(self) -> bool:
        return bool(self._forms)

    def text(self, value: str) -> str:
        """Redact a plain string (for values that go elsewhere than the rollout)."""
        for s in self._texts:
            if s in value:
                value = value.replace(s, REDACTED)
        return value

    def contains_secret(self, data: bytes) -> bool:
        return any(f in data for f in self._forms)

    def line(self, data: bytes) -> bytes:
        """Return ``data`` with every secret replaced; ``data`` itself when none occurs."""
        out = data
        for f in self._forms:
            if f in out:
                out = out.replace(f, REDACTED.encode())
        if out is data:
            return data
        try:
            RolloutLineAdapter.validate_json(out)
            return out
        except ValidationError:
            pass
        # The secret collided with the line's structure (a field name or a literal such as
        # "completed"): redact value by value, sparing schema field names and literal fields.
        structured = json.dumps(self._walk(json.loads(data)), ensure_ascii=False, separators=(",", ":")).encode()
        try:
            RolloutLineAdapter.validate_json(structured)
            return structured
        except ValidationError:
            log.warning("redacting a secret made a rollout line invalid; it is written redacted and will be skipped")
            return out

    def _walk(self, value: Any, key: str | None = None) -> Any:
        if isinstance(value, str):
            return value if key in _LITERAL_FIELDS else self.text(value)
        if isinstance(value, list):
            return [self._walk(v) for v in value]
        if isinstance(value, dict):
            return {(k if k in _FIELD_NAMES else self.text(k)): self._walk(v, k) for k, v in value.items()}
        return value


def _field_names() -> frozenset[str]:
    """Every field name of the rollout models: keys a byte-level redaction must not touch."""
    seen: set[type] = set()
    names: set[str] = set()

    def visit(tp: Any) -> None:
        for arg in get_args(tp):
            visit(arg)
        if isinstance(tp, type) and issubclass(tp, BaseModel) and tp not in seen:
            seen.add(tp)
            for name, f in tp.model_fields.items():
                names.add(name)
                visit(f.annotation)

    visit(RolloutLine)
    return frozenset(names)


_FIELD_NAMES = _field_names()
_LITERAL_FIELDS = frozenset({"type", "status", "entry", "policy"})
"""Fields whose values are literals: redacting them would make the line invalid."""


class RolloutWriter:
    """Appends lines to one thread's rollout; every ``append`` is on disk (page cache) on return.

    ``on_line`` is told of every appended line with its redacted bytes, which lets the index
    keep its counters without re-reading the file; it must be cheap and never raise.
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
        self.redactor = Redactor(secrets)
        self._on_line = on_line
        self._on_close = on_close
        self.path.parent.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | (os.O_EXCL if create else 0)
        self._fd: int | None = os.open(self.path, flags, 0o600)
        if not create:
            self._terminate_torn_tail()

    def _terminate_torn_tail(self) -> None:
        """Keep a torn last line (from a crash) on its own line, so the next append is intact."""
        size = os.fstat(self._fd).st_size  # type: ignore[arg-type]
        if size == 0:
            return
        with open(self.path, "rb") as f:
            f.seek(size - 1)
            if f.read(1) != b"\n":
                os.write(self._fd, b"\n")  # type: ignore[arg-type]

    @property
    def closed(self) -> bool:
        return self._fd is None

    def append(self, line: RolloutLine) -> None:
        """Serialize, redact and write one line; flushed to the OS before returning."""
        if self._fd is None:
            raise ValueError(f"rollout writer for {self.path} is closed")
        data = line.__pydantic_serializer__.to_json(line)
        if self.redactor:
            data = self.redactor.line(data)
        os.write(self._fd, data + b"\n")
        if self._on_line is not None:
            try:
                self._on_line(line, data)
            except Exception:  # the line is written; bookkeeping must not turn that into a failure
                log.exception("rollout line hook failed for %s", self.path)

    def append_item(self, item: Item) -> None:
        self.append(ItemRecord(item=item))

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


def read_rollout(path: Path | str) -> tuple[list[RolloutLine], list[str]]:
    """Read every valid line; invalid ones are skipped with a warning naming file and line.

    A crash may leave a torn last line and a hand edit may leave garbage anywhere: neither is
    fatal, because the rest of the file is still the facts of the thread.
    """
    path = Path(path)
    data = path.read_bytes()
    raw = data.split(b"\n")
    if raw and raw[-1] == b"":
        raw.pop()
    last = len(raw)
    lines: list[RolloutLine] = []
    warnings: list[str] = []
    validate = RolloutLineAdapter.validate_json
    for n, chunk in enumerate(raw, 1):
        if not chunk.strip():
            continue
        try:
            lines.append(validate(chunk))
        except ValidationError as e:
            what = "torn last line" if n == last and not data.endswith(b"\n") else "invalid line"
            first = e.errors()[0] if e.errors() else {}
            reason = first.get("msg", str(e)).splitlines()[0] if first else str(e).splitlines()[0]
            warnings.append(f"{path}:{n}: skipped {what} ({reason})")
    return lines, warnings
