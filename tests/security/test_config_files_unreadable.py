"""Config files that are not what they seem: a project file that is a link out of the trusted
folder is not read (as an ``AGENTS.md`` linking out is not), and a user ``config.toml`` that
is there but cannot be read (a folder, a link loop or a link to nothing, a FIFO, no permission,
not UTF-8) stops nbagent with one line naming the file and why, instead of nbagent running on
without the user's policy, servers and list of trusted folders."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from nbagent.config import load_config
from nbagent.config.trust import ENV
from tests.cli.proc import can_drop_privilege, nbagent, one_line_error
from tests.notebook.harness import Kernel
from tests.security.test_project_trust import planted
from tests.waiting import wait_for


@pytest.mark.parametrize("name", ["nbagent.toml", ".mcp.json"])
def test_a_project_file_linked_out_of_the_trusted_folder_is_not_read(tmp_path: Path, name: str) -> None:
    outside = planted(tmp_path / "elsewhere", tmp_path / "ran")
    work = tmp_path / "work"
    (work / "conf").mkdir(parents=True)
    (work / name).symlink_to(outside / name)
    environ = {"NBAGENT_HOME": str(tmp_path / "home"), ENV: str(work)}
    config = load_config(work, environ=environ)
    assert config.mcp_servers == {} and config.approval_policy == "on-request"
    assert config.warnings == [
        f"{work / name}: not read: it is a link to {outside / name}, outside the trusted folder {work}"
    ]

    (work / name).unlink()  # a link that stays inside the trusted folder is read as the file
    (work / "conf" / name).write_bytes((outside / name).read_bytes())
    (work / name).symlink_to(work / "conf" / name)
    assert load_config(work, environ=environ).mcp_servers != {}


def _folder(path: Path) -> None:
    path.mkdir()


def _loop(path: Path) -> None:
    path.symlink_to(path.name)


def _dangling(path: Path) -> None:
    path.symlink_to(path.parent / "gone.toml")


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _no_permission(path: Path) -> None:
    path.write_text('approval_policy = "untrusted"\n')
    path.chmod(0)


def _not_utf8(path: Path) -> None:
    path.write_bytes(b'model = "\xff"\n')


UNREADABLE: dict[str, tuple[Callable[[Path], None], str]] = {
    "a folder": (_folder, "not a regular file"),
    "a link loop": (_loop, "Too many levels of symbolic links"),
    "a link to nothing": (_dangling, "No such file or directory"),
    "a FIFO": (_fifo, "not a regular file"),
    "no permission": (_no_permission, "Permission denied"),
    "not UTF-8": (_not_utf8, "'utf-8' codec can't decode"),
}


@pytest.mark.parametrize("kind", UNREADABLE)
def test_an_unreadable_user_config_stops_nbagent_with_one_line_and_trusts_nothing(tmp_path: Path, kind: str) -> None:
    make, reason = UNREADABLE[kind]
    if kind == "no permission" and not can_drop_privilege():
        pytest.skip("needs a user file modes bind")
    home, marker = tmp_path / "home", tmp_path / "ran"
    home.mkdir()
    work = planted(tmp_path / "work", marker)
    make(home / "config.toml")
    proc = nbagent("tools", home=home, cwd=work, env={ENV: ""}, unprivileged=kind == "no permission", timeout=30)
    line = one_line_error(proc)
    assert line.startswith(f"nbagent tools: {home / 'config.toml'}: cannot read: ") and reason in line, line
    assert not marker.exists()


def test_the_notebook_says_at_start_that_the_user_config_cannot_be_read(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "config.toml").mkdir(parents=True)
    kernel = Kernel(tmp_path, env={"NBAGENT_HOME": str(home)})
    try:
        kernel.run("%load_ext nbagent")

        def said() -> list:
            kernel.pump(0.05)
            return [w for w in kernel.find("HTMLModel") if "cannot read" in str(w.state.get("value"))]

        shown = wait_for(said, timeout=60, what="the startup display naming the unreadable user config")
        assert f"{home / 'config.toml'}: cannot read: not a regular file" in shown[0].state["value"]
        assert "no MCP servers configured" not in str([w.state.get("value") for w in kernel.find("HTMLModel")])
    finally:
        kernel.close()
