"""A small, real MCP server shipped with nbagent for the quickstart, the demo and the tests.

It keeps notes as files in one directory and has exactly the three kinds of tool a walkthrough
needs: a read-only one (runs without asking), a destructive one (needs approval) and one that
asks the user a question through an elicitation. The question is asked with ``Resolve``/``Elicit``
so it works on both protocol generations (pushed ``elicitation/create`` on 2025-11-25, the
``input_required`` round trip on 2026-07-28).

Every tool execution is appended as one JSON line to the file named by ``--record`` or
``$NBAGENT_DEMO_RECORD``: server-side evidence that tests compare against what the client saw.

Run: ``python -m nbagent.examples.demo_server --dir NOTES_DIR [--record FILE]``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import json
import os
import re
import time
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class _State:
    """Where notes live and where executions are recorded (set from the command line)."""

    notes_dir: Path = Path.cwd() / "demo_notes"
    record: Path | None = None


def _record(tool: str, arguments: dict[str, Any], **extra: Any) -> None:
    if _State.record is None:
        return
    line = {"tool": tool, "arguments": arguments, "at": time.time(), **extra}
    with _State.record.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(line, sort_keys=True) + "\n")


def _note_path(name: str) -> Path:
    if not NAME_RE.match(name) or name.startswith("."):
        raise ToolError(f"bad note name {name!r}: use letters, digits, '_', '-', '.'")
    return _State.notes_dir / f"{name}.md"


class Experiment(BaseModel):
    """What the user is asked before an experiment is logged: one field of each kind."""

    title: str = Field(description="Short title of the experiment", min_length=3, max_length=60)
    owner_email: str = Field(description="Who to contact", json_schema_extra={"format": "email"})
    runs: int = Field(default=3, description="How many runs", ge=1, le=100)
    learning_rate: float = Field(default=0.01, description="Learning rate", ge=0.0, le=1.0)
    public: bool = Field(default=False, description="Share the results")
    optimizer: Literal["sgd", "adam", "adamw"] = Field(default="adam", description="Optimizer")
    tags: list[Literal["vision", "nlp", "rl"]] = Field(default_factory=list, description="Tags", max_length=2)
    start: _dt.date | None = Field(default=None, description="Start date")


def _ask_experiment(name: str) -> Elicit[Experiment]:
    return Elicit(f"Details for experiment '{name}'?", Experiment)


server = MCPServer(
    name="demo",
    instructions="A notes store. list_notes and read_note are read-only; write_note changes files.",
)


@server.tool(
    title="List notes",
    annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False),
)
def list_notes() -> str:
    """List the names of all notes."""
    _record("list_notes", {})
    if not _State.notes_dir.is_dir():
        return "(no notes yet)"
    names = sorted(p.stem for p in _State.notes_dir.glob("*.md"))
    return "\n".join(names) if names else "(no notes yet)"


@server.tool(
    title="Read a note",
    annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False),
)
def read_note(name: str) -> str:
    """Return the text of one note."""
    _record("read_note", {"name": name})
    path = _note_path(name)
    if not path.is_file():
        raise ToolError(f"no note named {name!r}")
    return path.read_text(encoding="utf-8")


@server.tool(
    title="Write a note",
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False),
)
async def write_note(name: str, text: str, ctx: Context) -> str:
    """Create or overwrite a note. Overwriting destroys the old text, so this asks for approval."""
    path = _note_path(name)
    for step in range(1, 4):
        await ctx.report_progress(step, 3, f"writing {name} ({step}/3)")
        await asyncio.sleep(0.05)
    path.parent.mkdir(parents=True, exist_ok=True)
    existed = path.is_file()
    path.write_text(text, encoding="utf-8")
    _record("write_note", {"name": name, "text": text})
    return f"{'overwrote' if existed else 'wrote'} {path.name} ({len(text)} characters)"


@server.tool(
    title="Log an experiment",
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
)
def log_experiment(name: str, details: Annotated[Experiment, Resolve(_ask_experiment)]) -> str:
    """Ask the user for the experiment's details, then store them as a note."""
    content = details.model_dump(mode="json")
    path = _note_path(f"experiment-{name}")
    path.parent.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    body = "\n".join(f"- {key}: {value}" for key, value in content.items())
    path.write_text(f"# {details.title}\n\nlogged {stamp}\n\n{body}\n", encoding="utf-8")
    _record("log_experiment", {"name": name}, content=content)
    return f"logged experiment {name!r}: {json.dumps(content, sort_keys=True)}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m nbagent.examples.demo_server", description=__doc__)
    parser.add_argument("--dir", default=os.environ.get("NBAGENT_DEMO_DIR"), help="where notes are stored")
    parser.add_argument("--record", default=os.environ.get("NBAGENT_DEMO_RECORD"), help="JSONL of executions")
    args = parser.parse_args(argv)
    if args.dir:
        _State.notes_dir = Path(args.dir).expanduser().resolve()
    if args.record:
        _State.record = Path(args.record).expanduser().resolve()
    # MCPServer.run() uses anyio.run; calling the async form keeps one entry point for embedders too.
    asyncio.run(server.run_stdio_async())


if __name__ == "__main__":
    main()
