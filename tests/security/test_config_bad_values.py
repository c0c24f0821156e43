"""A config value of the wrong type, a number that is not one, or a file nested past reason is
one line naming the file and the key; none of them is silently read as something else."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.cli.proc import demo_server, nbagent, one_line_error

DEPTH = 100_000


def mcp_json(work: Path, server: dict) -> Path:
    work.mkdir(exist_ok=True)
    path = work / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": {"notes": server}}))
    return path


def notes_server(tmp_path: Path, **keys: object) -> dict:
    script = Path(__file__).parents[2] / "nbagent" / "examples" / "demo_server.py"
    return {"command": sys.executable, "args": [str(script), "--dir", str(tmp_path / "notes")], **keys}


@pytest.mark.parametrize(
    ("keys", "key"),
    [
        ({"disabled": "false"}, "mcpServers.notes.disabled"),
        ({"disabled": "true"}, "mcpServers.notes.disabled"),
        ({"disabled": 0}, "mcpServers.notes.disabled"),
        ({"disabled": None}, "mcpServers.notes.disabled"),
        ({"type": 5}, "mcpServers.notes.type"),
        ({"type": "carrier-pigeon"}, "mcpServers.notes.type"),
        ({"type": ["stdio"]}, "mcpServers.notes.type"),
    ],
)
def test_config_mcp_json_value_of_the_wrong_type_is_one_line(tmp_path: Path, keys: dict, key: str) -> None:
    path = mcp_json(tmp_path / "work", notes_server(tmp_path, **keys))
    line = one_line_error(nbagent("tools", "--json", home=tmp_path / "home", cwd=path.parent))
    assert str(path) in line and key in line


@pytest.mark.parametrize(("disabled", "state"), [(True, "disabled"), (False, "ready")])
def test_config_mcp_json_boolean_disabled_still_means_what_it_says(tmp_path: Path, disabled: bool, state: str) -> None:
    path = mcp_json(tmp_path / "work", notes_server(tmp_path, disabled=disabled, type="stdio"))
    proc = nbagent("tools", "--json", home=tmp_path / "home", cwd=path.parent)
    assert proc.returncode == 0, proc.stderr
    assert [s["state"] for s in json.loads(proc.stdout)["servers"]] == [state]


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("startup_timeout_sec = nan", "mcp_servers.notes.startup_timeout_sec"),
        ("startup_timeout_sec = -nan", "mcp_servers.notes.startup_timeout_sec"),
        ("startup_timeout_sec = inf", "mcp_servers.notes.startup_timeout_sec"),
        ("tool_timeout_sec = nan", "mcp_servers.notes.tool_timeout_sec"),
        ("enabled = \"false\"", "mcp_servers.notes.enabled"),
        ("required = 1", "mcp_servers.notes.required"),
        ("trusted = \"yes\"", "mcp_servers.notes.trusted"),
    ],
)
def test_config_toml_server_value_that_is_not_what_the_key_takes_is_one_line(tmp_path: Path, line: str, key: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "nbagent.toml").write_text(demo_server("notes", tmp_path) + line + "\n")
    error = one_line_error(nbagent("tools", home=tmp_path / "home", cwd=work))
    assert str(work / "nbagent.toml") in error and key in error


@pytest.mark.parametrize("line", ["approval_timeout_sec = nan", "elicitation_timeout_sec = inf",
                                  "parallel_tool_calls = \"no\"", "max_tool_rounds = 2.5"])
def test_config_toml_top_level_value_that_is_not_what_the_key_takes_is_one_line(tmp_path: Path, line: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(line + "\n")
    error = one_line_error(nbagent("threads", home=home, cwd=tmp_path))
    assert str(home / "config.toml") in error and line.split(" = ")[0] in error


@pytest.mark.parametrize(
    ("name", "text", "key"),
    [
        ("nbagent.toml", "x = " + "[" * DEPTH + "]" * DEPTH + "\n", "x"),
        ("nbagent.toml", "[mcp_servers.notes]\nargs = " + "[" * DEPTH + "]" * DEPTH + "\n", "args"),
        ("nbagent.toml", "deep = " + "{a = " * DEPTH + "1" + "}" * DEPTH + "\n", "deep"),
        ("nbagent.toml", "model = \"m\"\n\n# [[[ not nested\nmcp_servers = " + "[" * DEPTH + "\n", "mcp_servers"),
        (".mcp.json", '{"mcpServers": {"notes": {"args": ' + "[" * DEPTH + "]" * DEPTH + "}}}", "args"),
        (".mcp.json", '{"mcpServers": ' + '{"a": ' * DEPTH + "1" + "}" * DEPTH + "}", "a"),
        (".mcp.json", '{"mcpServers": {"notes": {"env": {"K": "[[[["}, "args": ' + "[" * DEPTH + "}}}", "args"),
    ],
)
def test_config_file_nested_past_reason_is_one_line_naming_file_and_key(
    tmp_path: Path, name: str, text: str, key: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / name).write_text(text)
    error = one_line_error(nbagent("tools", home=tmp_path / "home", cwd=work))
    assert str(work / name) in error and f"'{key}'" in error


@pytest.mark.parametrize("file", ["project", "user"])
def test_config_model_provider_naming_no_table_is_one_line_naming_the_file(tmp_path: Path, file: str) -> None:
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    path = work / "nbagent.toml" if file == "project" else home / "config.toml"
    path.write_text('model = "m"\nmodel_provider = "nope"\n')
    error = one_line_error(nbagent("threads", home=home, cwd=work))
    assert str(path) in error and "model_provider" in error and "[model_providers.nope]" in error


@pytest.mark.parametrize("url", ["ftp://x", "file:///etc/passwd", "127.0.0.1:8000/mcp", "http://"])
def test_config_server_url_that_is_not_web_is_one_line_and_mcp_add_writes_nothing(tmp_path: Path, url: str) -> None:
    """An HTTP server's ``url`` is checked as it is read, not when its start fails: a config says
    so naming file and key, and ``nbagent mcp add`` refuses before writing the entry."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "nbagent.toml").write_text(f"[mcp_servers.x]\nurl = {json.dumps(url)}\n")
    error = one_line_error(nbagent("tools", home=tmp_path / "home", cwd=work))
    assert str(work / "nbagent.toml") in error and "mcp_servers.x.url" in error and "not an http:// or https:// URL" in error
    (work / "nbagent.toml").unlink()
    added = nbagent("mcp", "add", "x", "--url", url, home=tmp_path / "home", cwd=work)
    assert added.returncode != 0 and "key 'url'" in one_line_error(added)
    assert not (work / "nbagent.toml").exists()
