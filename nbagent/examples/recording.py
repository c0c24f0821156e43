"""What the example servers share: a record of what each executed, and their command line.

Every call a walkthrough's server executes is appended as one JSON line to the file named by
``--record``: the server's own word for what reached it, for a notebook to set beside what
nbagent recorded and what the model read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer


class Record:
    """Appends one JSON line per execution once ``path`` is set (by ``serve``); else does nothing."""

    def __init__(self) -> None:
        self.path: Path | None = None

    def __call__(self, tool: str, **data: Any) -> None:
        if self.path is None:
            return
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"tool": tool, "at": time.time(), **data}, sort_keys=True) + "\n")


def serve(server: MCPServer, record: Record, argv: list[str] | None, *, prog: str, description: str | None) -> None:
    """Parse ``--record FILE`` and run ``server`` over stdio."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--record", help="JSONL file every execution is appended to")
    args = parser.parse_args(argv)
    if args.record:
        record.path = Path(args.record).expanduser().resolve()
    asyncio.run(server.run_stdio_async())
