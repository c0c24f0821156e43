"""``nbagent mcp`` on hostile or secret-bearing configs: another tool's file is untrusted text,
and a secret in a config is never printed or copied."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.proc import nbagent

ESCAPES = ["\x1b]52;c;cHduZWQ=\x07", "\x1b[2J", "\u202e", "\u200b"]
"""Clipboard write (OSC 52), clear screen, right-to-left override, zero-width space."""


def test_import_shows_controls_from_another_tools_file_instead_of_obeying_them(tmp_path: Path) -> None:
    servers = {f"evil{i}{text}": {"command": "npx"} for i, text in enumerate(ESCAPES)}
    servers["bad"] = {"command": "npx", "args": ["-y", "${X}" + ESCAPES[0]], "headers": {"X-A": ESCAPES[1] + "${Y}"}}
    servers["odd"] = {"url": "https://odd.invalid/mcp", "headers": {"X-B": "${Z}" + ESCAPES[2]}, "timeout" + ESCAPES[3]: 1}
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))

    for argv in (["import", "claude", "--dry-run", "--from", str(tmp_path / ".mcp.json")], ["list"]):
        proc = nbagent("mcp", *argv, home=tmp_path / "home", cwd=tmp_path)
        shown = proc.stdout + proc.stderr
        assert not any(text in shown for text in ESCAPES), (argv, shown)
        if argv[0] == "import":
            assert "<U+001B>]52" in shown and "<U+202E>" in shown  # named, visibly
            assert "the name must match [a-zA-Z0-9_-]+" in shown and "(skipped)" in shown


def test_list_get_and_import_never_print_or_copy_a_secret(tmp_path: Path) -> None:
    secret = "sk-live-0123456789"
    project = tmp_path / "project"
    project.mkdir()
    (project / "nbagent.toml").write_text(
        '[mcp_servers.local]\ncommand = "python"\n'
        f'env = {{ API_KEY = "{secret}" }}\n'
        '[mcp_servers.remote]\nurl = "https://r.invalid/mcp"\n'
        f'http_headers = {{ X-Api-Key = "{secret}" }}\n'
    )
    for argv in (["list"], ["list", "--json"], ["get", "local"], ["get", "local", "--json"], ["get", "remote"],
                 ["get", "remote", "--json"]):  # fmt: skip
        proc = nbagent("mcp", *argv, home=tmp_path / "home", cwd=project)
        assert proc.returncode == 0, proc.stderr
        assert secret not in proc.stdout + proc.stderr, argv
        assert "*****" in proc.stdout or argv[0] == "list"

    (project / ".vscode").mkdir()
    (project / ".vscode" / "mcp.json").write_text(json.dumps({
        "inputs": [{"type": "promptString", "id": "api-key", "password": True}],
        "servers": {"vs": {"url": "https://vs.invalid/mcp", "headers": {"Authorization": "Bearer ${input:api-key}",
                                                                      "X-Other": "${env:OTHER_SECRET}"}}},
    }))  # fmt: skip
    proc = nbagent("mcp", "import", "vscode", home=tmp_path / "home", cwd=project,
                   env={"API_KEY": secret, "OTHER_SECRET": secret})  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    written = (project / "nbagent.toml").read_text()
    assert written.count(secret) == 2  # the two the person wrote themselves, and no more
    assert 'bearer_token_env_var = "API_KEY"' in written and 'X-Other = "OTHER_SECRET"' in written
