"""Several nbagent processes editing one config file at once (``nbagent mcp add`` in two
terminals, a kernel's "Always" while ``nbagent trust`` runs): every edit is kept, the file
parses whenever anyone reads it, and it keeps the mode its owner gave it."""

from __future__ import annotations

import stat
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from tests.cli.proc import start_nbagent

WRITERS = 8


def parsed_while_running(path: Path, procs: list[subprocess.Popen[str]], timeout: float = 120) -> int:
    """Read ``path`` over and over until every process has ended; each read must parse. How many
    reads found the file."""
    reads, deadline = 0, time.monotonic() + timeout
    while any(p.poll() is None for p in procs):
        assert time.monotonic() < deadline, "the writers did not finish"
        if path.exists():
            tomllib.loads(path.read_text(encoding="utf-8"))  # raises on a torn or half-written file
            reads += 1
    return reads


@pytest.mark.parametrize("what", ["mcp add", "trust"])
def test_parallel_edits_of_one_config_file_are_all_kept(tmp_path: Path, what: str) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    if what == "mcp add":
        path = work / "nbagent.toml"
        argv = [["mcp", "add", f"s{i}", "--", sys.executable, "-c", "pass"] for i in range(WRITERS)]
    else:
        path = home / "config.toml"
        folders = [work / f"f{i}" for i in range(WRITERS)]
        for folder in folders:
            folder.mkdir()
        argv = [["trust", str(folder)] for folder in folders]
    path.write_text("# mine\n")
    path.chmod(0o640)

    procs = [start_nbagent(*args, home=home, cwd=work) for args in argv]
    parsed_while_running(path, procs)
    for proc in procs:
        _, err = proc.communicate()
        assert proc.returncode == 0, err

    data = tomllib.loads(path.read_text(encoding="utf-8"))
    if what == "mcp add":
        assert sorted(data["mcp_servers"]) == sorted(f"s{i}" for i in range(WRITERS))
    else:
        assert sorted(data["projects"]) == sorted(str(folder) for folder in folders)
    assert path.read_text().startswith("# mine\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".")] == [], "a lock or temporary file was left"
