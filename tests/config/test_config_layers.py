"""Config layering: a project file refines the user's tables; it does not have to repeat them."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbagent.config import ConfigError, load_config
from tests.trusting import TRUSTED


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_a_project_file_may_override_one_key_of_a_user_server(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    write(home / "config.toml", '[mcp_servers.files]\ncommand = "npx"\nargs = ["-y", "fs"]\n')
    write(work / "nbagent.toml", "[mcp_servers.files]\ntool_timeout_sec = 10\n")
    config = load_config(work, environ={**TRUSTED, "NBAGENT_HOME": str(home)})
    files = config.mcp_servers["files"]
    assert (files.command, files.args, files.tool_timeout_sec) == ("npx", ["-y", "fs"], 10)


def test_a_bad_value_in_a_partial_override_still_names_the_project_file_and_key(tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    write(home / "config.toml", '[mcp_servers.files]\ncommand = "npx"\n')
    write(work / "nbagent.toml", "[mcp_servers.files]\ntool_timeout_sec = -1\n")
    with pytest.raises(ConfigError) as err:
        load_config(work, environ={**TRUSTED, "NBAGENT_HOME": str(home)})
    message = str(err.value)
    assert message.startswith(str(work / "nbagent.toml")) and "mcp_servers.files.tool_timeout_sec" in message


def test_a_project_server_with_its_own_command_replaces_the_user_definition(tmp_path: Path) -> None:
    """A redefined server does not inherit the user's env (secrets) or cwd for another program."""
    home, work = tmp_path / "home", tmp_path / "work"
    write(home / "config.toml", '[mcp_servers.db]\nurl = "https://example.com/mcp"\n'
          '[mcp_servers.files]\ncommand = "npx"\ncwd = "/srv"\nenv = { TOKEN = "user-secret" }\n')
    write(work / "nbagent.toml", '[mcp_servers.db]\ncommand = "python"\n'
          '[mcp_servers.files]\ncommand = "python"\nargs = ["srv.py"]\n')
    config = load_config(work, environ={**TRUSTED, "NBAGENT_HOME": str(home)})
    files, db = config.mcp_servers["files"], config.mcp_servers["db"]
    assert (files.command, files.args, files.env, files.cwd) == ("python", ["srv.py"], {}, None)
    assert (db.command, db.url, db.transport) == ("python", None, "stdio")


def test_always_for_a_server_from_mcp_json_leaves_a_config_that_loads(tmp_path: Path) -> None:
    from nbagent.config.edit import record_always_approval

    home, work = tmp_path / "home", tmp_path / "work"
    write(work / ".mcp.json", '{"mcpServers": {"files": {"command": "npx", "args": ["fs"]}}}')
    config = load_config(work, environ={**TRUSTED, "NBAGENT_HOME": str(home)})
    written = record_always_approval(config, "files", "read_file", cwd=work)
    assert written == work / "nbagent.toml"
    again = load_config(work, environ={**TRUSTED, "NBAGENT_HOME": str(home)})
    assert again.mcp_servers["files"].command == "npx"
    assert again.mcp_servers["files"].approval_mode_for("read_file") == "approve"


def test_an_unreadable_mcp_json_is_a_clear_error_naming_the_file(tmp_path: Path) -> None:
    from nbagent.config import ConfigError, load_config

    (tmp_path / ".mcp.json").write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(ConfigError, match=r"\.mcp\.json: cannot read"):
        load_config(tmp_path, environ={**TRUSTED, "NBAGENT_HOME": str(tmp_path / "home")})
