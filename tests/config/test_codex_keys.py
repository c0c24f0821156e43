"""A Codex ``config.toml`` loads unchanged: every key Codex accepts under ``[mcp_servers.NAME]``
means what it means in Codex, and a key nbagent cannot honour is a warning naming it."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.config import ConfigError, load_config
from tests.cli.proc import nbagent
from tests.trusting import TRUSTED

FIXTURE = Path(__file__).parent / "fixtures" / "codex_config.toml"
CODEX_KEYS = {
    "command", "args", "env", "env_vars", "cwd", "http_headers", "env_http_headers", "url",
    "bearer_token_env_var", "http_headers_helper", "environment_id", "auth", "startup_timeout_sec",
    "startup_timeout_ms", "tool_timeout_sec", "enabled", "required", "supports_parallel_tool_calls",
    "omit_tools_from", "default_tools_approval_mode", "enabled_tools", "disabled_tools", "scopes",
    "oauth", "oauth_resource", "name", "tools",
}  # fmt: skip
"""Codex's ``RawMcpServerConfig`` fields, less ``bearer_token``, which Codex refuses (tested below)."""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def codex_home(tmp_path: Path) -> Path:
    """The fixture as the user's own ``config.toml``."""
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(FIXTURE, home / "config.toml")
    return home


def load(home: Path, work: Path | None = None):
    work = work or home.parent / "work"
    work.mkdir(exist_ok=True)
    return load_config(work, environ={**TRUSTED, "NBAGENT_HOME": str(home)})


def test_the_fixture_uses_every_key_codex_accepts_for_a_server() -> None:
    servers = tomllib.loads(FIXTURE.read_text())["mcp_servers"]
    assert set().union(*(table.keys() for table in servers.values())) == CODEX_KEYS


def test_a_codex_config_with_every_key_loads_with_codex_meanings(codex_home: Path) -> None:
    config = load(codex_home)
    docs, linear = config.mcp_servers["docs"], config.mcp_servers["linear"]
    assert (docs.command, docs.args, docs.env, docs.cwd) == ("npx", ["-y", "@acme/docs-mcp"], {"DOCS_LANG": "en"}, "~/src/docs")
    assert docs.env_vars == ["DOCS_TOKEN", "DOCS_REGION", "DOCS_ZONE"]
    assert (docs.startup_timeout_sec, docs.tool_timeout_sec, docs.required) == (20.0, 90.5, True)
    assert [t for t in ("search", "fetch", "delete_page", "other") if docs.tool_enabled(t)] == ["search", "fetch"]
    modes = {t: docs.approval_mode_for(t) for t in ("search", "fetch", "other")}
    assert modes == {"search": "approve", "fetch": "prompt", "other": "writes"}
    assert (linear.url, linear.transport, linear.enabled) == ("https://mcp.linear.app/mcp", "http", False)
    assert (linear.http_headers, linear.env_http_headers) == ({"X-Client": "codex"}, {"X-Workspace": "LINEAR_WORKSPACE"})
    assert linear.bearer_token_env_var == "LINEAR_TOKEN"
    assert (linear.scopes, linear.oauth_resource) == (["read", "write"], "https://mcp.linear.app")
    assert linear.startup_timeout_sec == 12, "startup_timeout_sec wins over startup_timeout_ms, as in Codex"
    assert (config.mcp_oauth_credentials_store, config.mcp_oauth_callback_port) == ("keyring", 4321)


def test_each_key_nbagent_cannot_honour_is_one_warning_naming_file_server_and_key(codex_home: Path) -> None:
    config = load(codex_home)
    warnings = config.warnings
    origin = str(codex_home / "config.toml")
    assert all(w.startswith(f"{origin}: MCP server ") for w in warnings), warnings
    expected = {
        "'docs'": ["'supports_parallel_tool_calls'", "'omit_tools_from'", "'tools.search.output_token_limit'",
                   "'env_vars' ('DOCS_ZONE' from source 'remote')"],
        "'linear'": ["'http_headers_helper'", "'auth' ('chatgpt')", "'environment_id' ('devbox')"],
    }  # fmt: skip
    for server, keys in expected.items():
        for key in keys:
            assert sum(f"MCP server {server}: key {key}" in w for w in warnings) == 1, (server, key, warnings)
    assert config.mcp_servers["linear"].oauth.client_id == "codex-cli"  # type: ignore[union-attr]
    assert not any("'oauth.client_id'" in w for w in warnings)
    for key in ("callback_url", "callback_port"):  # the callback is always nbagent's own, on 127.0.0.1
        assert sum(f"MCP server 'linear': key 'oauth.{key}' is ignored" in w for w in warnings) == 1
    honoured = CODEX_KEYS - {"supports_parallel_tool_calls", "omit_tools_from", "http_headers_helper", "auth",
                             "environment_id", "oauth", "env_vars", "tools"}  # fmt: skip
    for key in honoured:  # what nbagent honours is never called ignored
        assert not any(f"key '{key}' " in w for w in warnings), (key, warnings)
    assert all(" is ignored: " in w or "the source is ignored" in w for w in warnings)


def test_defaults_that_mean_what_nbagent_does_anyway_raise_no_warning(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / "config.toml", '[mcp_servers.a]\ncommand = "x"\nenvironment_id = "local"\nauth = "oauth"\n'
          'supports_parallel_tool_calls = false\nomit_tools_from = []\nname = "A"\n')  # fmt: skip
    assert load(home).warnings == []


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('url = "https://x/mcp"\nbearer_token = "sk-live-123"', "'bearer_token' is not supported"),
        ('command = "x"\nstartup_timeout_ms = "20000"', "mcp_servers.a.startup_timeout_ms"),
        ('command = "x"\nstartup_timeout_ms = 0', "mcp_servers.a.startup_timeout_ms"),
        ('command = "x"\ndefault_tools_approval_mode = "sometimes"', "mcp_servers.a.default_tools_approval_mode"),
        ('command = "x"\ntools.t.approval_mode = "yes"', "mcp_servers.a.tools.t.approval_mode"),
        ('command = "x"\nenv_vars = [{ name = "A", source = "cloud" }]', "key 'mcp_servers.a.env_vars.0.source': Input should be 'local' or 'remote'"),
        ('command = "x"\nenv_vars = [{ name = "A", from = "local" }]', "key 'mcp_servers.a.env_vars.0.from': Extra inputs are not permitted"),
        ('command = "x"\nenv_vars = [3]', "mcp_servers.a.env_vars.0"),
        ('url = "https://x/mcp"\nauth = "magic"', "key 'mcp_servers.a.auth': Input should be 'oauth' or 'chatgpt'"),
        ('url = "https://x/mcp"\nscopes = "read write"', "mcp_servers.a.scopes"),
        ('command = "x"\nsupports_parallel_tool_calls = "yes"', "key 'mcp_servers.a.supports_parallel_tool_calls': Input should be a valid boolean"),
        ('command = "x"\ntools.t.output_token_limit = -5', "key 'mcp_servers.a.tools.t.output_token_limit': Input should be greater than 0"),
        ('url = "https://x/mcp"\noauth = { callback_port = "80" }', "key 'mcp_servers.a.oauth.callback_port': Input should be a valid integer"),
        ('url = "https://x/mcp"\nhttp_headers_helper = ["sh"]', "key 'mcp_servers.a.http_headers_helper': Input should be a valid string"),
        ('command = "x"\nenabled = "false"', "mcp_servers.a.enabled"),
    ],
)
def test_a_codex_key_with_a_wrong_value_is_an_error_naming_file_and_key(tmp_path: Path, table: str, message: str) -> None:
    home = write(tmp_path / "home" / "config.toml", f"[mcp_servers.a]\n{table}\n").parent
    with pytest.raises(ConfigError) as err:
        load(home)
    assert str(err.value).startswith(str(home / "config.toml")) and message in str(err.value)
    assert "sk-live-123" not in str(err.value), "a refused secret is not echoed back"


def test_keys_for_the_other_transport_are_warnings_not_silently_dropped(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home / "config.toml", '[mcp_servers.web]\nurl = "https://x/mcp"\nenv = { A = "1" }\ncwd = "/srv"\n'
          '[mcp_servers.local]\ncommand = "x"\nbearer_token_env_var = "T"\n')  # fmt: skip
    warnings = load(home).warnings
    assert any("'web': key 'env' is ignored: it applies to stdio servers only" in w for w in warnings)
    assert any("'web': key 'cwd' is ignored" in w for w in warnings)
    assert any("'local': key 'bearer_token_env_var' is ignored: it applies to HTTP servers only" in w for w in warnings)


async def test_the_session_announces_each_ignored_key_as_a_warning_event(codex_home: Path, tmp_path: Path) -> None:
    seen: list[str] = []
    config = load(codex_home)
    servers = {name: s.model_copy(update={"enabled": False}) for name, s in config.mcp_servers.items()}
    config = config.model_copy(update={"mcp_servers": servers})
    session = Session(config=config, cwd=tmp_path, home=tmp_path / "threads")
    session.subscribe(lambda e: seen.append(e.msg.message) if e.msg.type == "warning" else None)
    async with session:
        pass
    assert all(any(w == s for s in seen) for w in config.warnings) and config.warnings



def test_nbagent_tools_lists_each_ignored_key_as_a_warning(codex_home: Path, tmp_path: Path) -> None:
    """The real CLI on the Codex file: it loads, lists the servers and names each ignored key."""
    work = tmp_path / "work"
    work.mkdir()
    text = (codex_home / "config.toml").read_text()
    text = text.replace("enabled = true", "enabled = false").replace("required = true", "required = false")
    (codex_home / "config.toml").write_text(text)  # nothing to start: the listing is of the config alone
    done = nbagent("tools", "--json", home=codex_home, cwd=work, timeout=120)
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    assert sorted(s["name"] for s in listing["servers"]) == ["docs", "linear"]
    assert listing["warnings"] == load(codex_home, work).warnings
    assert any("key 'http_headers_helper' is ignored" in w for w in listing["warnings"])


def test_always_written_into_a_codex_file_keeps_its_keys_and_comments(codex_home: Path) -> None:
    from nbagent.config.edit import record_always_approval

    before = load(codex_home)
    record_always_approval(before, "docs", "fetch", cwd=codex_home.parent / "work")
    text = (codex_home / "config.toml").read_text()
    assert "# legacy display name, ignored by Codex too" in text and "http_headers_helper" in text
    after = load(codex_home)
    assert after.mcp_servers["docs"].approval_mode_for("fetch") == "approve"
    assert after.warnings == before.warnings
