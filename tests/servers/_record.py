"""Server-side evidence for tests: every tool execution is appended to $RECORD_FILE as JSON."""

from __future__ import annotations

import json
import os
import time
from typing import Any

PROCESS = f"{os.getpid()}-{os.urandom(8).hex()}"
"""This server process, distinct from any other: in a sandbox every server is pid 2 of its own
PID namespace, so its pid does not tell two server processes apart."""


def record(tool: str, **data: Any) -> None:
    path = os.environ.get("RECORD_FILE")
    if not path:
        return
    line = json.dumps({"tool": tool, "pid": os.getpid(), "process": PROCESS, "at": time.time(), **data}, default=str)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
        fh.flush()
