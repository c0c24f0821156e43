"""``inspect wire`` is a security boundary: a server's JSON-RPC traffic is shown only with every
secret gone: its env values, header values, bearer token and OAuth tokens, values under
secret-named keys however deep, and those same values wherever a hostile server echoes them."""

from __future__ import annotations

import json
from pathlib import Path

import mcp_types as types
import pytest

from nbagent.config import Config, McpServerConfig
from nbagent.mcp.manager import McpConnectionManager
from nbagent.mcp.oauth.storage import FileBackend, OAuthRecord, TokenStore
from nbagent.mcp.wire import WIRE_KEEP, WireTap, server_secrets
from nbagent.protocol.elicitation import ElicitOutcome
from tests.mcp.conftest import server_cfg

SECRET = "tok-SECRET-wire-31337"
SETTING = "plain-setting-value"


async def _decline(_request: object) -> ElicitOutcome:
    return ElicitOutcome(action="decline")


async def _traffic(tmp_path: Path, arguments: dict) -> str:
    """Start the leaky server, call it once, and return its wire view as JSON text."""
    cfg = server_cfg("leaky.py", env={"LEAKY_TOKEN": SECRET, "LEAKY_SETTING": SETTING})
    async with McpConnectionManager({"leaky": cfg}, lambda e: None, _decline, tmp_path / "logs") as mcp:
        conn = mcp.connection("leaky")
        assert conn is not None and conn.state == "ready"
        await conn.call_tool("whoami", arguments)
        return json.dumps([m.model_dump(mode="json") for m in mcp.wire("leaky")])


async def test_a_server_echoing_its_env_values_back_shows_none_of_them(tmp_path: Path) -> None:
    shown = await _traffic(tmp_path, {"note": {"mine": SECRET}})
    # the server put them in its instructions, a tool description, and the call's result
    assert SECRET not in shown and SETTING not in shown
    assert "my token is [redacted]" in shown and "Bearer [redacted]" in shown
    assert '"method": "tools/call"' in shown and '"mine": "[redacted]"' in shown


async def test_a_secret_inside_nested_params_is_redacted_going_out_and_coming_back(tmp_path: Path) -> None:
    nested = {"note": {"deep": [{"password": "pw-nested-55501"}, {"ok": "visible-text"}], "client_secret": "cs-nested-77"}}
    shown = await _traffic(tmp_path, nested)
    assert "pw-nested-55501" not in shown and "cs-nested-77" not in shown  # sent, and echoed inside a JSON text
    assert "sk-unlisted-0123456789" not in shown  # a value under api_key inside the server's text result
    assert "visible-text" in shown  # what is not a secret stays readable


def test_header_values_the_bearer_token_and_stored_oauth_tokens_are_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WIRE_BEARER", "bearer-value-4040")
    monkeypatch.setenv("WIRE_HDR", "env-header-value-8080")
    config = Config(home=str(tmp_path / "home"), mcp_oauth_credentials_store="file")
    cfg = McpServerConfig(
        url="http://127.0.0.1:9/mcp", bearer_token_env_var="WIRE_BEARER",
        http_headers={"X-Static": "static-header-6060"}, env_http_headers={"X-Env": "WIRE_HDR"},
    )  # fmt: skip
    record = OAuthRecord(url=cfg.url, tokens={"access_token": "oauth-access-1111", "refresh_token": "oauth-refresh-2222",
                                              "token_type": "Bearer"})  # fmt: skip
    FileBackend(config.home_path / "oauth", "remote").write(record.model_dump_json())
    TokenStore(FileBackend(config.home_path / "oauth", "remote"), "remote", cfg.url)  # read, as a connection does
    tap = WireTap()
    leaked = "bearer-value-4040 env-header-value-8080 static-header-6060 oauth-access-1111 oauth-refresh-2222"
    tap.note("received", types.JSONRPCResponse(jsonrpc="2.0", id=1, result={"content": [{"type": "text", "text": leaked}],
                                                                           "note": "Authorization: Bearer unknown-token-xyz"}))  # fmt: skip
    [message] = tap.messages(server_secrets("remote", cfg, config))
    text = json.dumps(message.model_dump(mode="json"))
    for value in [*leaked.split(), "unknown-token-xyz"]:
        assert value not in text, value
    assert text.count("[redacted]") == 6


def test_protocol_ids_under_token_like_names_stay_readable() -> None:
    tap = WireTap()
    tap.note("sent", types.JSONRPCRequest(jsonrpc="2.0", id=7, method="tools/call", params={
        "name": "t", "arguments": {"token": "abcdefgh-secret"}, "_meta": {"progressToken": 7}}))  # fmt: skip
    [message] = tap.messages([])
    params = message.message["params"]
    assert params["_meta"] == {"progressToken": 7} and params["arguments"] == {"token": "[redacted]"}


def test_the_tap_keeps_a_bounded_number_of_messages_newest_last() -> None:
    tap = WireTap()
    for n in range(WIRE_KEEP + 50):
        tap.note("sent", types.JSONRPCNotification(jsonrpc="2.0", method=f"notifications/n{n}"))
    shown = tap.messages([])
    assert len(shown) == WIRE_KEEP and shown[-1].method == f"notifications/n{WIRE_KEEP + 49}"
    assert [m.seq for m in tap.messages([], last=3)] == [WIRE_KEEP + 48, WIRE_KEEP + 49, WIRE_KEEP + 50]


def test_the_password_in_a_servers_url_is_hidden_from_its_wire_view() -> None:
    """The client sends ``user:password@`` as a Basic header; a server echoing it back shows none."""
    cfg = McpServerConfig(url="https://me:url-password-0451@mcp.example/mcp")
    tap = WireTap()
    tap.note("received", types.JSONRPCResponse(jsonrpc="2.0", id=1, result={"content": [
        {"type": "text", "text": "you are me with url-password-0451"}]}))  # fmt: skip
    [message] = tap.messages(server_secrets("web", cfg, Config()))
    text = json.dumps(message.model_dump(mode="json"))
    assert "url-password-0451" not in text and "you are me with [redacted]" in text
