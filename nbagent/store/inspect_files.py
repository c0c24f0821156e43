"""What ``inspect`` reads of a thread that no process holds: two files beside its rollout.

``<id>.request.json`` is the last turn's model requests without their items (written whole:
temp file, then rename); ``<id>.turns.ndjson`` has one line per finished turn, its timeline. Both
arrive redacted. They are views, not facts: the store ignores them (only ``*.jsonl`` files are
rollouts) and deleting them loses nothing of the thread.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["InspectFiles", "MAX_TURN_LINES"]

MAX_TURN_LINES = 200
"""Turns kept in ``<id>.turns.ndjson``: the file is cut back to the newest past this."""


class InspectFiles:
    def __init__(self, threads_dir: Path, thread_id: str) -> None:
        self.request_path = threads_dir / f"{thread_id}.request.json"
        self.turns_path = threads_dir / f"{thread_id}.turns.ndjson"

    def write_request(self, text: str) -> None:
        tmp = self.request_path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, self.request_path)

    def append_turn(self, line: str) -> None:
        fd = os.open(self.turns_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as fh:
            fh.write(line.replace("\n", " ") + "\n")
        if self.turns_path.stat().st_size > MAX_TURN_LINES * 4096:
            lines = self.turns()[-MAX_TURN_LINES // 2 :]
            tmp = self.turns_path.with_suffix(".tmp")
            tmp.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
            os.replace(tmp, self.turns_path)

    def request(self) -> str | None:
        try:
            return self.request_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def turns(self) -> list[str]:
        try:
            text = self.turns_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        return [line for line in text.splitlines() if line.strip()]
