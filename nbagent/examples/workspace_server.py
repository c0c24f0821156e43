"""A small, real MCP server for the "fix a failing test" walkthroughs: one project folder, three tools.

``run_tests`` runs pytest on the folder (read-only: no cache, no bytecode written; no plugins
autoloaded, so the run depends on the project alone; a failing run is a tool error carrying
pytest's report), ``read_file`` returns one file, ``apply_patch`` replaces
one exact piece of one file and returns the diff (destructive: it needs approval). Every path is
relative to ``--root`` and must stay inside it once ``..`` and symlinks are followed; anything
else is refused naming the path. No shell is ever used.

Every execution is appended as one JSON line (tool, arguments, the text returned, whether it was
an error) to ``--record FILE``: what the tool gave the MCP SDK to send, to set beside what the model saw.

Run: ``python -m nbagent.examples.workspace_server --root DIR [--record FILE]``.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

TEST_TIMEOUT_SEC = 60
MAX_READ_BYTES = 64_000


class _State:
    root: Path = Path.cwd()
    record: Path | None = None


def inside(root: Path, path: str) -> Path:
    """``path`` (relative to ``root``) as a real path inside ``root``; a ``ToolError`` naming it
    otherwise. Resolving follows every symlink, so a link leading out is caught like ``..``."""
    base = root.resolve()
    if Path(path).is_absolute():
        raise ToolError(f"path {path!r} is outside the workspace root: give a path relative to it")
    target = (base / path).resolve()
    if not target.is_relative_to(base):
        raise ToolError(f"path {path!r} is outside the workspace root")
    return target


def _recorded(fn: Callable[..., str]) -> Callable[..., str]:
    """Append what the tool returned (or the error it raised) to the record, then pass it on."""

    @wraps(fn)
    def run(**arguments: Any) -> str:
        try:
            text, error = fn(**arguments), False
        except ToolError as exc:
            text, error = str(exc), True
        if _State.record is not None:
            line = {"tool": fn.__name__, "arguments": arguments, "sent": text, "is_error": error, "at": time.time()}
            with _State.record.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(line, sort_keys=True) + "\n")
        if error:
            raise ToolError(text)
        return text

    return run


server = MCPServer(
    name="workspace",
    instructions="One project folder. run_tests and read_file change nothing; apply_patch edits a file.",
)


@server.tool(
    title="Run the tests",
    annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False),
)
@_recorded
def run_tests(path: str = ".") -> str:
    """Run pytest on a folder or file of the project; fails with pytest's report when a test fails."""
    target = inside(_State.root, path)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "--color=no", "-p", "no:cacheprovider", str(target)]
    try:
        done = subprocess.run(
            command, cwd=_State.root, env=env, capture_output=True, text=True, timeout=TEST_TIMEOUT_SEC, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"the tests took longer than {TEST_TIMEOUT_SEC} s") from exc
    report = (done.stdout + done.stderr).strip()
    if done.returncode != 0:
        raise ToolError(f"pytest exited with {done.returncode}\n{report}")
    return report


@server.tool(
    title="Read a file",
    annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False),
)
@_recorded
def read_file(path: str) -> str:
    """Return the text of one file of the project."""
    target = inside(_State.root, path)
    if not target.is_file():
        raise ToolError(f"no file {path!r} in the workspace")
    with target.open("rb") as fh:  # at most the cap is read, however large the file
        return fh.read(MAX_READ_BYTES).decode("utf-8", errors="replace")


@server.tool(
    title="Apply a patch",
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False),
)
@_recorded
def apply_patch(path: str, old: str, new: str) -> str:
    """Replace the one occurrence of ``old`` in a file with ``new``; returns the unified diff."""
    target = inside(_State.root, path)
    if not target.is_file():
        raise ToolError(f"no file {path!r} in the workspace")
    try:
        before = target.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"{path}: not UTF-8 text, so it cannot be patched") from exc
    count = before.count(old) if old else 0
    if count != 1:
        raise ToolError(f"{path}: the text to replace occurs {count} times, not once")
    after = before.replace(old, new, 1)
    target.write_text(after, encoding="utf-8")
    name = target.relative_to(_State.root.resolve()).as_posix()
    diff = difflib.unified_diff(before.splitlines(True), after.splitlines(True), f"a/{name}", f"b/{name}")
    return "".join(diff)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m nbagent.examples.workspace_server", description=__doc__)
    parser.add_argument("--root", required=True, help="the project folder; no path outside it is touched")
    parser.add_argument("--record", help="JSONL file: one line per execution, with what was sent back")
    args = parser.parse_args(argv)
    _State.root = Path(args.root).expanduser().resolve()
    _State.root.mkdir(parents=True, exist_ok=True)
    if args.record:
        _State.record = Path(args.record).expanduser().resolve()
    asyncio.run(server.run_stdio_async())


if __name__ == "__main__":
    main()
