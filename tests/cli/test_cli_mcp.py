"""``nbagent mcp list|get|add|remove|login|logout|import`` as a person runs them: the real
command in a subprocess, real config files in a temporary folder, read back byte for byte."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import stat
import sys
from pathlib import Path

import pytest

from nbagent.config import load_config
from tests.cli.proc import SERVERS, failing_server, nbagent, one_line_error, start_nbagent, stdio_server
from tests.trusting import TRUSTED

CODEX_FIXTURE = Path(__file__).resolve().parents[1] / "config" / "fixtures" / "codex_config.toml"

PROJECT = """\
# The project's servers.
model = "replay:script.json"  # scripted

# Notes, read-only.
[mcp_servers.notes]
command = "python"  # the interpreter
args = ["notes.py"]

[mcp_servers.notes.tools.read_note]
approval_mode = "approve"  # asked once, always

# A remote one, to be removed.
[mcp_servers.web]
url = "https://example.invalid/mcp"

# Last, kept as it is.
[mcp_servers.last]
url = "https://last.invalid/mcp"
"""


def test_add_and_remove_keep_comments_and_order(tmp_path: Path) -> None:
    (tmp_path / "nbagent.toml").write_text(PROJECT)
    home = tmp_path / "home"

    added = nbagent("mcp", "add", "fresh", "--env", "LEVEL=debug", "--", "python", "srv.py", "--flag", "--", "x",
                    home=home, cwd=tmp_path)  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert f"Added MCP server 'fresh' to {tmp_path / 'nbagent.toml'}" in added.stdout
    replaced = nbagent("mcp", "add", "notes", "--url", "https://notes.invalid/mcp", "--bearer-token-env-var", "NOTES_TOKEN",
                       home=home, cwd=tmp_path)  # fmt: skip
    assert replaced.returncode == 0 and "Replaced how MCP server 'notes' starts" in replaced.stdout
    removed = nbagent("mcp", "remove", "web", home=home, cwd=tmp_path)
    assert removed.returncode == 0 and f"Removed MCP server 'web' from {tmp_path / 'nbagent.toml'}" in removed.stdout

    assert (tmp_path / "nbagent.toml").read_text() == """\
# The project's servers.
model = "replay:script.json"  # scripted

# Notes, read-only.
[mcp_servers.notes]
url = "https://notes.invalid/mcp"
bearer_token_env_var = "NOTES_TOKEN"

[mcp_servers.notes.tools.read_note]
approval_mode = "approve"  # asked once, always

# Last, kept as it is.
[mcp_servers.last]
url = "https://last.invalid/mcp"

[mcp_servers.fresh]
command = "python"
args = ["srv.py", "--flag", "--", "x"]
env = {LEVEL = "debug"}
"""
    listed = json.loads(nbagent("mcp", "list", "--json", home=home, cwd=tmp_path).stdout)
    assert [(s["name"], s["source"], s["auth"]) for s in listed] == [
        ("fresh", str(tmp_path / "nbagent.toml"), "-"),
        ("last", str(tmp_path / "nbagent.toml"), "oauth"),
        ("notes", str(tmp_path / "nbagent.toml"), "bearer $NOTES_TOKEN"),
    ]
    assert listed[0]["env"] == {"LEVEL": "*****"}  # a value that may be a secret is never printed
    shown = nbagent("mcp", "get", "notes", home=home, cwd=tmp_path).stdout
    assert "url: https://notes.invalid/mcp" in shown and "read_note" in shown


def test_remove_takes_a_server_out_of_every_file_that_has_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[mcp_servers.shared]\ncommand = "python"\n')
    mcp_json = {"mcpServers": {"shared": {"command": "node"}, "other": {"command": "node", "args": ["o.js"]}}}
    (tmp_path / ".mcp.json").write_text(json.dumps(mcp_json, indent=4))
    (tmp_path / "nbagent.toml").write_text('# refined here\n[mcp_servers.shared.tools.t]\napproval_mode = "approve"\n')

    proc = nbagent("mcp", "remove", "shared", home=home, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        f"Removed MCP server 'shared' from {path}" for path in (tmp_path / "nbagent.toml", tmp_path / ".mcp.json", home / "config.toml")
    ]
    assert json.loads((tmp_path / ".mcp.json").read_text()) == {"mcpServers": {"other": {"command": "node", "args": ["o.js"]}}}
    assert (tmp_path / ".mcp.json").read_text().startswith('{\n    "mcpServers"')  # its indent kept
    assert list(load_config(tmp_path, environ={**TRUSTED, "NBAGENT_HOME": str(home)}).mcp_servers) == ["other"]


def test_import_codex_round_trip_with_every_key(tmp_path: Path) -> None:
    codex, project, home = tmp_path / "codex", tmp_path / "project", tmp_path / "home"
    codex.mkdir()
    project.mkdir()
    shutil.copy(CODEX_FIXTURE, codex / "config.toml")
    (project / "nbagent.toml").write_text('# mine\nmodel = "replay:x.json"\n')

    proc = nbagent("mcp", "import", "codex", home=home, cwd=project, env={"CODEX_HOME": str(codex)})
    assert proc.returncode == 0, proc.stderr
    assert "imported 'docs'" in proc.stdout and "imported 'linear'" in proc.stdout
    assert "note: " in proc.stdout and "key 'http_headers_helper' is ignored" in proc.stdout  # says what is not honoured

    as_codex = load_config(tmp_path / "empty", environ={**TRUSTED, "NBAGENT_HOME": str(codex)})
    imported = load_config(project, environ={**TRUSTED, "NBAGENT_HOME": str(home)})
    assert imported.mcp_servers == as_codex.mcp_servers and set(imported.mcp_servers) == {"docs", "linear"}
    assert imported.mcp_oauth_credentials_store == "keyring" and imported.mcp_oauth_callback_port == 4321
    assert [w.split(": ", 1)[1] for w in imported.warnings] == [w.split(": ", 1)[1] for w in as_codex.warnings]
    text = (project / "nbagent.toml").read_text()
    assert text.startswith('# mine\nmodel = "replay:x.json"\n')
    assert "# legacy display name, ignored by Codex too" in text and "# startup_timeout_sec wins, as in Codex" in text

    again = nbagent("mcp", "import", "codex", home=home, cwd=project, env={"CODEX_HOME": str(codex)})
    assert again.returncode == 1 and "'docs' is already configured in" in again.stdout
    assert (project / "nbagent.toml").read_text() == text


CLAUDE = {
    "numStartups": 7,
    "mcpServers": {
        "github": {
            "type": "http",
            "url": "https://api.example.invalid/mcp",
            "headers": {"Authorization": "Bearer ${GITHUB_PAT}", "X-Org": "${ORG:-acme}", "X-Mixed": "a-${B}", "X-Plain": "p"},
        },
        "memory": {"command": "npx", "args": ["-y", "mem"], "env": {"API_KEY": "${API_KEY}", "TOKEN": "${OTHER}", "LEVEL": "1"}},
        "files": {"command": "npx", "args": ["-y", "fs", "${HOME}/notes"]},
    },
    "projects": {},
}
VSCODE = """{
  // VS Code asks for the key when the server starts
  "inputs": [{"type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key", "password": true}],
  "servers": {
    "pplx": {"type": "stdio", "command": "npx", "args": ["-y", "pplx"], "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}"}},
    "events": {"type": "sse", "url": "https://events.invalid/sse", "headers": {"X-Key": "${env:EVENTS_KEY}"}},
    "here": {"command": "python", "args": ["${workspaceFolder}/srv.py"], "envFile": "${workspaceFolder}/.env"},
  },
}
"""


def test_import_translates_variables_to_env_keys_and_a_dry_run_writes_nothing(tmp_path: Path) -> None:
    user, project = tmp_path / "user", tmp_path / "project"
    (project / ".vscode").mkdir(parents=True)
    user.mkdir()
    CLAUDE["projects"] = {str(project): {"mcpServers": {"local": {"type": "sse", "url": "http://127.0.0.1:9/sse"}}}}
    (user / ".claude.json").write_text(json.dumps(CLAUDE))
    (project / ".vscode" / "mcp.json").write_text(VSCODE)
    secrets = {"GITHUB_PAT": "ghp-secret-value", "API_KEY": "sk-secret-value", "EVENTS_KEY": "ev-secret-value"}
    env = {"HOME": str(user), **secrets}

    dry = nbagent("mcp", "import", "claude", "--dry-run", home=tmp_path / "home", cwd=project, env=env)
    assert not (project / "nbagent.toml").exists()  # nothing written
    assert dry.returncode == 1  # one server could not be imported
    assert "would import 'github'" in dry.stdout and "would import 'local'" in dry.stdout
    assert f"skipped: {user / '.claude.json'}: key 'mcpServers.files.args[2]': uses ${{HOME}}" in dry.stdout
    assert "key 'mcpServers.github.headers.X-Mixed': not translated" in dry.stdout
    assert "key 'mcpServers.memory.env.TOKEN': not translated (it renames $OTHER" in dry.stdout
    assert "its default is not kept: set $ORG" in dry.stdout and "'acme'" not in dry.stdout

    for tool in ("claude", "vscode"):
        nbagent("mcp", "import", tool, home=tmp_path / "home", cwd=project, env=env)
    text = (project / "nbagent.toml").read_text()
    assert not any(value in text for value in secrets.values())  # names of variables, never their values
    servers = load_config(project, environ={**TRUSTED, "NBAGENT_HOME": str(tmp_path / "home")}).mcp_servers
    github, memory = servers["github"], servers["memory"]
    assert github.bearer_token_env_var == "GITHUB_PAT" and github.env_http_headers == {"X-Org": "ORG"}
    assert github.http_headers == {"X-Plain": "p"}
    assert memory.env_vars == ["API_KEY"] and memory.env == {"LEVEL": "1"}
    assert servers["local"].transport == "sse" and servers["events"].transport == "sse"
    assert servers["events"].env_http_headers == {"X-Key": "EVENTS_KEY"}
    assert servers["pplx"].env_vars == ["PERPLEXITY_API_KEY"]
    assert servers["here"].args == [f"{project}/srv.py"]
    assert "files" not in servers


def test_errors_name_the_file_the_server_and_the_key(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "nbagent.toml").write_text(stdio_server("one", SERVERS / "features.py"))
    cases = {
        ("mcp", "get", "nosuch"): "no MCP server named 'nosuch' (configured: one)",
        ("mcp", "add", "bad name", "--", "python"): "server name 'bad name' must match",
        ("mcp", "add", "x", "--env", "NOEQUALS", "--", "python"): "--env 'NOEQUALS': must be KEY=VALUE",
        ("mcp", "add", "x", "--url", "http://h/mcp", "--", "python"): "either -- CMD ARGS... (a stdio server) or --url URL",
        ("mcp", "add", "x", "--bearer-token-env-var", "T", "--", "python"): "--bearer-token-env-var is for --url servers",
        ("mcp", "remove", "nosuch"): f"no MCP server named 'nosuch' in {home / 'config.toml'}",
        ("mcp", "frobnicate"): "invalid choice: 'frobnicate'",
        ("mcp", "import", "emacs"): "invalid choice: 'emacs'",
        ("mcp", "logout", "nosuch"): "no MCP server named 'nosuch'",
        ("mcp", "login", "one"): "MCP server 'one' does not log in with OAuth",
    }
    for argv, expected in cases.items():
        proc = nbagent(*argv, home=home, cwd=tmp_path)
        assert expected in one_line_error(proc), (argv, proc.stderr)
    before = (tmp_path / "nbagent.toml").read_text()

    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode" / "mcp.json").write_text('{"servers": {"a": {"command": 3}, "b": }')
    proc = nbagent("mcp", "import", "vscode", home=home, cwd=tmp_path)
    assert f"{tmp_path / '.vscode' / 'mcp.json'}: invalid JSON" in one_line_error(proc)
    (tmp_path / ".vscode" / "mcp.json").write_text('{"servers": {"a": {"command": 3}, "b": {"url": "https://b.invalid/mcp"}}}')
    proc = nbagent("mcp", "import", "vscode", home=home, cwd=tmp_path)
    assert proc.returncode == 1 and "imported 'b'" in proc.stdout
    assert f"skipped: {tmp_path / '.vscode' / 'mcp.json'}: key 'servers.a.command': must be a string, got int" in proc.stdout
    assert (tmp_path / "nbagent.toml").read_text().startswith(before)

    (tmp_path / "nbagent.toml").write_text("[mcp_servers.one\n")
    proc = nbagent("mcp", "add", "two", "--", "python", home=home, cwd=tmp_path)
    assert f"{tmp_path / 'nbagent.toml'}: invalid TOML" in one_line_error(proc)
    assert (tmp_path / "nbagent.toml").read_text() == "[mcp_servers.one\n"  # nothing lost


def test_list_check_starts_each_server_and_shows_its_state(tmp_path: Path) -> None:
    config = stdio_server("good", SERVERS / "features.py") + failing_server("broken", "no database configured")
    (tmp_path / "nbagent.toml").write_text(config)
    plain = nbagent("mcp", "list", home=tmp_path / "home", cwd=tmp_path)
    assert plain.returncode == 0 and "STATUS" not in plain.stdout  # no server was started
    proc = nbagent("mcp", "list", "--check", home=tmp_path / "home", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()[1:]}
    assert rows["good"].rstrip().endswith("tools)") and "ready (" in rows["good"]
    assert "failed" in rows["broken"] and sys.executable in rows["broken"]


@pytest.mark.timeout(180)
def test_login_prints_the_link_and_logout_forgets_the_tokens(tmp_path: Path) -> None:
    from tests.mcp.oauth_helpers import follow, serve_oauth

    home = tmp_path / "home"
    with contextlib.contextmanager(serve_oauth)(tmp_path) as server:
        (tmp_path / "nbagent.toml").write_text(f'mcp_oauth_credentials_store = "file"\n[mcp_servers.web]\nurl = "{server.url}"\n')
        before = nbagent("mcp", "list", home=home, cwd=tmp_path).stdout
        assert " oauth " in before and "logged in" not in before
        login = start_nbagent("mcp", "login", "web", home=home, cwd=tmp_path)
        try:
            assert login.stdout is not None
            lines = [login.stdout.readline() for _ in range(2)]
            assert "it is not opened for you" in lines[0], lines
            asyncio.run(follow(lines[1].strip()))  # the person opens it, consents, lands on the callback
            out, err = login.communicate(timeout=60)
        finally:
            login.kill()
        assert login.returncode == 0, err
        assert "Logged in to MCP server 'web'" in out
        stored = home / "oauth" / "web.json"
        assert stat.S_IMODE(stored.stat().st_mode) == 0o600
        assert "oauth (logged in)" in nbagent("mcp", "list", home=home, cwd=tmp_path).stdout
        tokens = json.loads(stored.read_text())

        logout = nbagent("mcp", "logout", "web", home=home, cwd=tmp_path)
        assert logout.returncode == 0 and "its stored OAuth tokens are removed" in logout.stdout
        assert not stored.exists()
        audit = "".join(path.read_text() for path in (home / "audit").glob("*.jsonl"))
        assert [(line["event"], line["server"]) for line in map(json.loads, audit.splitlines())] == [
            ("nbagent.mcp_login", "web"), ("nbagent.mcp_logout", "web")]
        assert not any(isinstance(v, str) and len(v) > 8 and v in audit for v in json.dumps(tokens).split('"'))
        again = nbagent("mcp", "logout", "web", home=home, cwd=tmp_path)
        assert "No OAuth tokens stored for MCP server 'web'" in again.stdout
