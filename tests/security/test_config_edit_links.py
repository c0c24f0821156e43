"""Editing a config file that is a symbolic link: nbagent does not read a project file that
links out of its folder, so it does not edit one either. ``nbagent mcp add``/``remove``/
``import`` and an "Always" refuse it with one line naming the file and where it leads, leaving
the link and the file it leads to as they were, instead of replacing the link with a copy of
that file (which would then be read, and carry the outside file's content into the folder). A
link that stays inside the folder, and the user's own ``config.toml`` wherever it leads, are
edited where they lead and stay links."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import pytest

from nbagent.config import ConfigError, load_config
from nbagent.config.edit import record_always_approval
from nbagent.config.trust import ENV
from tests.cli.proc import nbagent, one_line_error

THEIRS_TOML = '[mcp_servers.theirs]\ncommand = "theirs"\n'
THEIRS_JSON = json.dumps({"mcpServers": {"theirs": {"command": "theirs"}}})
EDITS = {
    "add": (["mcp", "add", "mine", "--", sys.executable, "-c", "pass"], "nbagent.toml"),
    "remove nbagent.toml": (["mcp", "remove", "theirs"], "nbagent.toml"),
    "remove .mcp.json": (["mcp", "remove", "theirs"], ".mcp.json"),
    "import": (["mcp", "import", "codex"], "nbagent.toml"),
}


def _linked(tmp_path: Path, name: str, target: Path) -> Path:
    """A folder whose ``name`` is a link to ``target``, which holds server ``theirs``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(THEIRS_JSON if name == ".mcp.json" else THEIRS_TOML)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / name).symlink_to(target)
    return work


def _codex(tmp_path: Path) -> dict[str, str]:
    """A Codex home holding one server of the person's own, for ``mcp import codex``."""
    codex = tmp_path / "codex"
    codex.mkdir()
    (codex / "config.toml").write_text('[mcp_servers.docs]\ncommand = "docs"\n')
    return {"CODEX_HOME": str(codex)}


@pytest.mark.parametrize("edit", EDITS)
def test_an_edit_of_a_project_file_linked_out_of_its_folder_is_refused(tmp_path: Path, edit: str) -> None:
    argv, name = EDITS[edit]
    outside = tmp_path / "elsewhere" / name
    work = _linked(tmp_path, name, outside)
    before = outside.read_bytes()
    proc = nbagent(*argv, home=tmp_path / "home", cwd=work, env=_codex(tmp_path))
    line = one_line_error(proc)
    verb = argv[1]
    assert line == f"nbagent mcp {verb}: {work / name}: not edited: it is a link to {outside}, outside its folder {work}"
    assert (work / name).is_symlink() and (work / name).readlink() == outside
    assert outside.read_bytes() == before
    assert sorted(p.name for p in work.iterdir()) == [name], "a file was written beside the link"


def test_an_always_for_a_server_of_mcp_json_is_not_written_through_a_link_out(tmp_path: Path) -> None:
    """A server of ``.mcp.json`` has its "Always" written to the folder's ``nbagent.toml``."""
    outside = tmp_path / "elsewhere" / "nbagent.toml"
    work = _linked(tmp_path, "nbagent.toml", outside)
    (work / ".mcp.json").write_text(json.dumps({"mcpServers": {"s": {"command": "s"}}}))
    config = load_config(work, environ={"NBAGENT_HOME": str(tmp_path / "home"), ENV: str(work)})
    assert config.sources["s"] == str(work / ".mcp.json")
    with pytest.raises(ConfigError) as refused:
        record_always_approval(config, "s", "t", cwd=work)
    assert str(refused.value) == (
        f"{work / 'nbagent.toml'}: not edited: it is a link to {outside}, outside its folder {work}"
    )
    assert (work / "nbagent.toml").readlink() == outside and outside.read_text() == THEIRS_TOML
    assert config.mcp_servers["s"].tools == {}


@pytest.mark.parametrize("name", ["nbagent.toml", ".mcp.json"])
def test_a_link_inside_the_folder_is_edited_where_it_leads(tmp_path: Path, name: str) -> None:
    inside = tmp_path / "work" / "conf" / name
    work = _linked(tmp_path, name, inside)
    home = tmp_path / "home"
    if name == "nbagent.toml":
        proc = nbagent("mcp", "add", "mine", "--", "mine", home=home, cwd=work)
        assert proc.returncode == 0, proc.stderr
        assert set(tomllib.loads(inside.read_text())["mcp_servers"]) == {"theirs", "mine"}
    else:
        proc = nbagent("mcp", "remove", "theirs", home=home, cwd=work)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(inside.read_text()) == {"mcpServers": {}}
    assert (work / name).is_symlink() and (work / name).resolve() == inside
    assert sorted(p.name for p in inside.parent.iterdir()) == [name], "a lock or temporary file was left"


def test_the_users_own_config_is_edited_where_its_link_leads(tmp_path: Path) -> None:
    """A ``config.toml`` kept with the person's other dotfiles stays a link to them."""
    dotfiles, home, folder = tmp_path / "dotfiles", tmp_path / "home", tmp_path / "folder"
    dotfiles.mkdir()
    home.mkdir()
    folder.mkdir()
    (dotfiles / "nbagent.toml").write_text("# mine\n")
    (home / "config.toml").symlink_to(dotfiles / "nbagent.toml")
    proc = nbagent("trust", str(folder), home=home, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (home / "config.toml").is_symlink()
    written = (dotfiles / "nbagent.toml").read_text()
    assert written.startswith("# mine\n") and str(folder) in tomllib.loads(written)["projects"]
