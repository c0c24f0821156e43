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

from nbagent.config.edit import locked
from tests.cli.proc import start_nbagent
from tests.waiting import wait_for

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


def waits_for_a_lock(pid: int) -> bool:
    """Whether process ``pid`` is blocked taking a lock (a ``->`` line of ``/proc/locks``)."""
    held = [line.split() for line in Path("/proc/locks").read_text().splitlines()]
    return any(fields[1] == "->" and fields[5] == str(pid) for fields in held)


def test_import_checks_what_exists_under_the_lock_it_writes_under(tmp_path: Path) -> None:
    """A server added under the name an import brings, while the import waits for the lock,
    is kept: the import sees it once it holds the lock, and skips its own."""
    if not Path("/proc/locks").exists():
        pytest.skip("needs /proc/locks to see the import wait")
    home, work, codex = tmp_path / "home", tmp_path / "work", tmp_path / "codex"
    for folder in (home, work, codex):
        folder.mkdir()
    (codex / "config.toml").write_text('[mcp_servers.docs]\ncommand = "theirs"\n')
    path = work / "nbagent.toml"
    path.write_text("# mine\n")

    with locked(path):  # another edit holds the lock ...
        proc = start_nbagent("mcp", "import", "codex", home=home, cwd=work, env={"CODEX_HOME": str(codex)})
        wait_for(lambda: waits_for_a_lock(proc.pid) or proc.poll() is not None, "the import to wait for the lock", 60)
        path.write_text('# mine\n[mcp_servers.docs]\ncommand = "mine"\n')  # ... and adds the same name
    out, err = proc.communicate(timeout=60)

    assert tomllib.loads(path.read_text())["mcp_servers"] == {"docs": {"command": "mine"}}, (out, err)
    assert f"server 'docs' is already configured in {path} (skipped)" in out, (out, err)
    assert proc.returncode == 1
