"""``.mcp.json`` as Claude Code reads it: each ``type`` honoured over a real connection,
``${VAR}`` / ``${VAR:-default}`` expanded where Claude Code expands them, wrong types refused."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.config import ConfigError, load_config
from nbagent.protocol import CallTool
from tests.mcp.conftest import SERVERS, HttpServer, http_server, records, sse_server
from tests.trusting import TRUSTED

FIXTURES = Path(__file__).parent / "fixtures" / "mcp_json"
__all__ = ["http_server", "sse_server"]  # the real servers, as fixtures of this module


def project(tmp_path: Path, fixture: str) -> Path:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    shutil.copy(FIXTURES / fixture, work / ".mcp.json")
    return work


def mcp_json(tmp_path: Path, servers: dict) -> Path:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return work


async def call_add(config, tmp_path: Path) -> str:
    """``add`` through a session on the one configured server, as a caller outside the model would."""
    async with Session(config=config, cwd=tmp_path, home=tmp_path / "threads", policy="full-auto") as session:
        await session._servers.ready()
        name = next(iter(config.mcp_servers))
        assert session._servers.status()[name].state == "ready", session._servers.status()
        output = await session.perform(CallTool(name=f"mcp__{name}__add", arguments={"a": 2, "b": 40}))
    assert not output.is_error, output.output
    return output.output


async def test_type_stdio_runs_the_expanded_command_args_and_env(tmp_path: Path) -> None:
    record = tmp_path / "work" / "record.jsonl"  # in the workspace, which its sandbox lets it write
    environ = {**TRUSTED, "NBAGENT_HOME": str(tmp_path / "home"), "PYTHON": sys.executable, "SERVERS": str(SERVERS),
               "RECORD": str(record)}  # fmt: skip
    config = load_config(project(tmp_path, "stdio.json"), environ=environ)
    feat = config.mcp_servers["feat"]
    assert (feat.transport, feat.command) == ("stdio", sys.executable)
    assert feat.args == [f"{SERVERS}/features.py", "--unused=none", "$NOT_EXPANDED"]
    assert feat.env == {"RECORD_FILE": str(record), "MODE": "quiet"}
    async with Session(config=config, cwd=tmp_path, home=tmp_path / "threads", policy="full-auto") as session:
        await session._servers.ready()
        output = await session.perform(CallTool(name="mcp__feat__read_note", arguments={"key": "k"}))
    assert not output.is_error, output.output
    assert [r["tool"] for r in records(record)] == ["read_note"]


async def test_type_http_connects_over_streamable_http_with_expanded_url_and_headers(
    tmp_path: Path, http_server: HttpServer
) -> None:
    environ = {**TRUSTED, "NBAGENT_HOME": str(tmp_path / "home"), "HTTP_URL": http_server.url, "HTTP_TOKEN": http_server.token}
    config = load_config(project(tmp_path, "http.json"), environ=environ)
    web = config.mcp_servers["web"]
    assert (web.transport, web.url) == ("http", http_server.url)
    assert web.http_headers == {"Authorization": f"Bearer {http_server.token}", "X-Client": "nbagent"}
    assert "42" in await call_add(config, tmp_path)


async def test_type_sse_connects_with_the_sdk_sse_client(tmp_path: Path, sse_server: HttpServer) -> None:
    """The server speaks only the older HTTP+SSE transport: streamable HTTP could not call it."""
    environ = {**TRUSTED, "NBAGENT_HOME": str(tmp_path / "home"), "SSE_URL": sse_server.url, "HTTP_TOKEN": sse_server.token}
    config = load_config(project(tmp_path, "sse.json"), environ=environ)
    assert config.mcp_servers["events"].transport == "sse"
    assert "42" in await call_add(config, tmp_path)
    assert [r["tool"] for r in records(sse_server.record)] == ["add"]


async def test_the_sse_endpoint_is_not_reachable_as_streamable_http(tmp_path: Path, sse_server: HttpServer) -> None:
    """What ``type: "sse"`` being read as ``http`` would do: the connection fails."""
    environ = {**TRUSTED, "NBAGENT_HOME": str(tmp_path / "home"), "SSE_URL": sse_server.url, "HTTP_TOKEN": sse_server.token}
    work = project(tmp_path, "sse.json")
    text = (work / ".mcp.json").read_text().replace('"sse"', '"http"')
    (work / ".mcp.json").write_text(text)
    config = load_config(work, environ=environ)
    config.mcp_servers["events"] = config.mcp_servers["events"].model_copy(update={"startup_timeout_sec": 10})
    async with Session(config=config, cwd=tmp_path, home=tmp_path / "threads") as session:
        await session._servers.ready()
        assert session._servers.status()["events"].state == "failed"


@pytest.mark.parametrize(
    ("value", "environ", "expected"),
    [
        ("${A}", {"A": "1"}, "1"),
        ("${A:-d}", {}, "d"),
        ("${A:-d}", {"A": "set"}, "set"),
        ("${A:-}", {}, ""),
        ("${A:-}", {"A": ""}, ""),  # set but empty is set, as in Claude Code
        ("x${A}y${B:-z}", {"A": "1"}, "x1yz"),
        ("${A:-a:-b}", {}, "a:-b"),
        ("$A ${A", {"A": "1"}, "$A ${A"),  # neither is the ${VAR} form
        ("${A}", {"A": "${B}", "B": "secret"}, "${B}"),  # a value is never expanded again
    ],
)
def test_expansion_follows_claude_code(tmp_path: Path, value: str, environ: dict, expected: str) -> None:
    work = mcp_json(tmp_path, {"s": {"command": "x", "args": [value], "env": {"V": value}}})
    config = load_config(work, environ={**TRUSTED, "NBAGENT_HOME": str(tmp_path / "home"), **environ})
    s = config.mcp_servers["s"]
    assert (s.args, s.env) == ([expected], {"V": expected})


@pytest.mark.parametrize("field", ["command", "args", "env", "url", "headers"])
def test_a_missing_variable_without_default_names_file_server_key_and_variable(tmp_path: Path, field: str) -> None:
    value = "${NOT_SET_ANYWHERE}"
    entry = {
        "command": {"command": value},
        "args": {"command": "x", "args": ["ok", value]},
        "env": {"command": "x", "env": {"K": value}},
        "url": {"type": "http", "url": value},
        "headers": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"X-Key": value}},
    }[field]
    work = mcp_json(tmp_path, {"github": entry})
    with pytest.raises(ConfigError) as err:
        load_config(work, environ={**TRUSTED, "NBAGENT_HOME": str(tmp_path / "home"), "OTHER_SECRET": "s3cr3t"})
    message = str(err.value)
    assert message.startswith(str(work / ".mcp.json"))
    assert f"key 'mcpServers.github.{field}" in message and "NOT_SET_ANYWHERE is not set" in message
    assert "s3cr3t" not in message


def test_only_the_fields_claude_code_expands_are_expanded(tmp_path: Path) -> None:
    work = mcp_json(tmp_path, {"s": {"command": "x", "cwd": "${HOME_DIR}", "enabled_tools": ["${T}"]}})
    s = load_config(work, environ={**TRUSTED, "NBAGENT_HOME": str(tmp_path / "home"), "HOME_DIR": "/h", "T": "t"}).mcp_servers["s"]
    assert (s.cwd, s.enabled_tools) == ("${HOME_DIR}", ["${T}"])


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        ({"type": "websocket", "url": "ws://x"}, "mcpServers.s.type'"),
        ({"type": 1, "command": "x"}, "mcpServers.s.type'"),
        ({"command": "x", "args": "--flag"}, "mcpServers.s.args"),
        ({"command": "x", "args": ["ok", 3]}, "mcpServers.s.args.1"),
        ({"command": "x", "env": {"PORT": 3000}}, "mcpServers.s.env.PORT"),
        ({"command": "x", "env": ["A=1"]}, "mcpServers.s.env"),
        ({"type": "http", "url": "http://x", "headers": ["X: y"]}, "mcpServers.s.headers"),
        ({"type": "http", "url": "http://x", "headers": {"X": True}}, "mcpServers.s.headers.X"),
        ({"command": ["npx", "x"]}, "mcpServers.s.command"),
        ({"command": "x", "disabled": "true"}, "mcpServers.s.disabled'"),
        ({"command": "x", "disabled": 0}, "mcpServers.s.disabled'"),
        ({"type": "stdio", "url": "http://x"}, "mcpServers.s"),
        ({"type": "sse", "command": "x"}, "mcpServers.s"),
        ({"type": "http", "url": 8080}, "mcpServers.s.url"),
        ({"command": "x", "oauth": {"scopes": ["a"]}}, "mcpServers.s.oauth.scopes'"),
        ({"command": "x", "oauth": "yes"}, "mcpServers.s.oauth'"),
        ({"command": "x", "argz": ["a"]}, "mcpServers.s.argz"),
    ],
)
def test_a_wrongly_typed_value_is_an_error_naming_the_key_as_the_file_spells_it(
    tmp_path: Path, entry: dict, key: str
) -> None:
    work = mcp_json(tmp_path, {"s": entry})
    with pytest.raises(ConfigError) as err:
        load_config(work, environ={**TRUSTED, "NBAGENT_HOME": str(tmp_path / "home")})
    message = str(err.value)
    assert message.startswith(str(work / ".mcp.json")) and f"key '{key}" in message, message


def test_claude_code_keys_nbagent_cannot_honour_are_warnings(tmp_path: Path) -> None:
    work = mcp_json(tmp_path, {"s": {
        "type": "http", "url": "http://x/mcp", "headersHelper": "./headers.sh",
        "oauth": {"clientId": "abc", "callbackPort": 8123, "scopes": "read write", "authServerMetadataUrl": "http://a"},
    }})  # fmt: skip
    config = load_config(work, environ={**TRUSTED, "NBAGENT_HOME": str(tmp_path / "home")})
    s, warnings = config.mcp_servers["s"], config.warnings
    assert s.scopes == ["read", "write"]
    origin = str(work / ".mcp.json")
    assert f"{origin}: key 'mcpServers.s.headersHelper' is ignored" in "\n".join(warnings)
    assert f"{origin}: key 'mcpServers.s.oauth.authServerMetadataUrl' is ignored" in "\n".join(warnings)


def test_disabled_true_turns_the_server_off(tmp_path: Path) -> None:
    work = mcp_json(tmp_path, {"s": {"command": "x", "disabled": True}, "t": {"command": "y", "disabled": False}})
    config = load_config(work, environ={**TRUSTED, "NBAGENT_HOME": str(tmp_path / "home")})
    assert (config.mcp_servers["s"].enabled, config.mcp_servers["t"].enabled) == (False, True)
