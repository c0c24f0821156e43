"""Where a stdio server's stderr goes: its own log file, whose end every failure shows."""

from __future__ import annotations

import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO

STDERR_TAIL_LINES = 20
STDERR_TAIL_BYTES = 4000


@dataclass
class StderrLog:
    """One server's stderr log; ``tail`` reads only what this start of the server wrote."""

    path: Path
    offset: int = 0
    file: IO[str] | None = None

    def open(self) -> IO[str]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(self.path, "a", encoding="utf-8", errors="replace")  # noqa: SIM115 - lives with the process
        self.file.write(f"--- nbagent: server start {time.strftime('%Y-%m-%d %H:%M:%S')} ---\n")
        self.file.flush()
        self.offset = self.file.tell()
        return self.file

    def close(self) -> None:
        if self.file is not None:
            with suppress(OSError):
                self.file.close()
            self.file = None

    def tail(self) -> str | None:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except OSError:
            return None
        text = data[-STDERR_TAIL_BYTES:].decode("utf-8", errors="replace")
        lines = text.splitlines()[-STDERR_TAIL_LINES:]
        return "\n".join(lines) or None
