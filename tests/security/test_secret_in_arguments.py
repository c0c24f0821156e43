"""A secret in a call's arguments never reaches an MCP server that was not given it.

The model (steered by hostile text, or having seen a secret echoed back) may put the API key,
another server's token or a process secret into a call. Such a call does not run, whatever the
policy and whoever edited its arguments: the server (a real one over stdio, recording what it
receives) gets nothing, the model is told which kind of secret it was (never its value), and the
rollout on disk records the refusal. A server's own token sent back to that same server runs."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest

from nbagent import Session
from nbagent.config import Config, McpServerConfig, ModelProviderConfig
from nbagent.mcp.wire import given_secrets, secret_sources
from nbagent.protocol import ApprovalDecision, CallTool, Event, ToolCallEnd
from nbagent.secrets import SecretsKept, add_process_secret, redacted
from tests.mcp.conftest import records, server_cfg

API_KEY = "sk-model-key-0123456789abcdef"
TOKEN_A = "server-a-token-9876543210"
TOKEN_B = "server-b-token-1357924680"
ENV_TOKEN = "env-service-token-24680135"
KEPT = "holds a secret nbagent keeps from this server"


def _servers(tmp_path: Path) -> dict[str, McpServerConfig]:
    """``a`` and ``b`` each hold their own token; both record every call they run."""
    return {
        "a": server_cfg("takes_any.py", tmp_path / "a.ndjson", env={"A_API_TOKEN": TOKEN_A}),
        "b": server_cfg("takes_any.py", tmp_path / "b.ndjson", env={"B_API_TOKEN": TOKEN_B}),
    }


def _received(tmp_path: Path, server: str) -> list[Any]:
    return [r["value"] for r in records(tmp_path / f"{server}.ndjson")]


def _outputs(home: Path, thread_id: str) -> tuple[str, dict[str, dict[str, Any]]]:
    """The rollout as on disk, and its call outputs by call id."""
    text = (home / "threads" / f"{thread_id}.jsonl").read_text()
    items = [line["item"] for line in map(json.loads, text.splitlines()) if line.get("type") == "item"]
    return text, {i["call_id"]: i for i in items if i["type"] == "function_call_output"}


def _call(call_id: str, server: str, tool: str, value: Any) -> dict[str, Any]:
    return {"call_id": call_id, "name": f"mcp__{server}__{tool}", "arguments": {"value": value}}


@pytest.mark.timeout(90)
async def test_a_secret_in_the_arguments_never_reaches_a_server_not_given_it(
    openai_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under full-auto, over a real model API: the API key, server a's token (as a nested key)
    and a secret-named environment variable are kept from server b; a's own token reaches a."""
    monkeypatch.setenv("SOME_SERVICE_TOKEN", ENV_TOKEN)
    openai_server.script([
        {"tool_calls": [
            _call("call_key", "b", "take", f"the key is {API_KEY}"),
            _call("call_other", "b", "take", {"deep": [{TOKEN_A: "as a key"}]}),
            _call("call_env", "b", "take", [f"x{ENV_TOKEN}y"]),
            _call("call_own", "a", "take", TOKEN_A),
            _call("call_plain", "b", "take", "plain"),
        ]},
        {"text": "done"},
    ])  # fmt: skip
    home = tmp_path / "home"
    config = Config(
        model="m", model_provider="local", approval_policy="full-auto", home=str(home),
        model_providers={"local": ModelProviderConfig(base_url=openai_server.base_url, wire_api="chat")},
        mcp_servers=_servers(tmp_path),
    )
    config.api_key = API_KEY
    events: list[Event] = []
    async with Session(config=config) as session:
        session.subscribe(events.append)
        result = await session.run("go")
        redactor = session._thread.redactor()
    assert result.text == "done", result

    assert _received(tmp_path, "b") == ["plain"], "server b was sent a secret it was not given"
    assert _received(tmp_path, "a") == [TOKEN_A], "server a's own token must still reach it"

    told = {m["tool_call_id"]: m["content"] for m in openai_server.requests[1]["messages"] if m.get("role") == "tool"}
    kinds = {"call_key": "the model API key", "call_other": "MCP server 'a''s env A_API_TOKEN",
             "call_env": "the environment variable SOME_SERVICE_TOKEN"}  # fmt: skip
    for call_id, kind in kinds.items():
        assert "MCP tool 'take' on server 'b'" in told[call_id] and KEPT in told[call_id], told[call_id]
        assert kind in told[call_id] and "not called" in told[call_id], told[call_id]
    sent_back = json.dumps([m for r in openai_server.requests[1:] for m in r["messages"] if m.get("role") == "tool"])
    for secret in (API_KEY, TOKEN_A, ENV_TOKEN):
        assert secret not in sent_back

    rollout, outputs = _outputs(home, result.thread_id)
    for call_id, kind in kinds.items():
        assert outputs[call_id]["status"] == "denied" and kind in outputs[call_id]["output"], outputs[call_id]
    assert outputs["call_own"]["status"] == outputs["call_plain"]["status"] == "completed"
    for secret in (API_KEY, TOKEN_A, ENV_TOKEN):
        assert secret not in rollout

    cards = {e.msg.call_id: redacted(e.msg, redactor) for e in events if isinstance(e.msg, ToolCallEnd)}
    for call_id, kind in kinds.items():
        assert cards[call_id].status == "denied" and kind in cards[call_id].output


@pytest.mark.timeout(90)
async def test_a_call_holding_a_secret_is_never_offered_and_edited_arguments_are_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under ``untrusted`` (every call asks): the model's call holding the API key is refused
    without an approval panel; a clean call the person approves with a secret typed into its
    arguments is refused after the approval. Server b runs neither."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [
        {"tool_calls": [_call("call_key", "b", "put", API_KEY), _call("call_clean", "b", "put", "harmless")]},
        {"text": "done"},
    ]}))  # fmt: skip
    home = tmp_path / "home"
    config = Config(model=f"replay:{script}", approval_policy="untrusted", home=str(home), mcp_servers=_servers(tmp_path))
    config.api_key = API_KEY
    asked: list[tuple[str, str]] = []
    async with Session(config=config, interactive=True) as session:

        def person(event: Event) -> None:
            if event.msg.type == "approval_requested":
                asked.append((event.msg.call_id, json.dumps(event.msg.arguments)))
                edited = {"value": f"now with {TOKEN_A}"}
                session.submit(ApprovalDecision(call_id=event.msg.call_id, decision="approve", arguments=edited))

        session.subscribe(person)
        result = await session.run("go")
    assert result.status == "completed", result
    assert [call_id for call_id, _ in asked] == ["call_clean"], "a call holding a secret was offered for approval"
    assert _received(tmp_path, "b") == []
    _, outputs = _outputs(home, result.thread_id)
    assert outputs["call_key"]["status"] == "denied" and "the model API key" in outputs["call_key"]["output"]
    assert outputs["call_clean"]["status"] == "denied" and "MCP server 'a''s env A_API_TOKEN" in outputs["call_clean"]["output"]


@pytest.mark.timeout(90)
async def test_an_outside_call_holding_a_process_secret_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``%agent serve``'s caller (``Session.call_tool``) may send back the server's own bearer
    token: it is kept from every MCP server as a model's call would be."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    serve_token = f"serve-{secrets.token_hex(12)}"
    add_process_secret(serve_token)
    home = tmp_path / "home"
    config = Config(approval_policy="full-auto", home=str(home), mcp_servers=_servers(tmp_path))
    async with Session(config=config) as session:
        await session._servers.ready()
        refused = await session.perform(CallTool(name="mcp__b__take", arguments={"value": {"headers": {"Authorization": f"Bearer {serve_token}"}}}))
        ran = await session.perform(CallTool(name="mcp__b__take", arguments={"value": TOKEN_B}))
        thread_id = session._thread.id
    assert refused.status == "denied" and refused.is_error and KEPT in refused.output, refused
    assert "a token of a server nbagent runs" in refused.output and serve_token not in refused.output
    assert ran.status == "completed", ran
    assert _received(tmp_path, "b") == [TOKEN_B], "b was sent the process's token, or not its own"
    rollout, _ = _outputs(home, thread_id)  # an outside call's output is its caller's; its turn is recorded
    assert '"entry":"notebook_server"' in rollout and serve_token not in rollout



@pytest.mark.timeout(90)
async def test_a_secret_set_after_the_session_started_is_kept_from_the_next_turn_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``os.environ["LATE_TOKEN"] = ...`` in a cell: the next turn keeps it from every server."""
    monkeypatch.delenv("LATE_TOKEN", raising=False)
    late = f"late-{secrets.token_hex(12)}"
    call = {"tool_calls": [_call("call_late", "b", "take", late)]}
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [call, {"text": "one"}, call, {"text": "two"}]}))
    home = tmp_path / "home"
    config = Config(model=f"replay:{script}", approval_policy="full-auto", home=str(home), mcp_servers=_servers(tmp_path))
    async with Session(config=config) as session:
        first = await session.run("before")
        monkeypatch.setenv("LATE_TOKEN", late)
        second = await session.run("after")
    assert _received(tmp_path, "b") == [late], "only the call made before the variable was set may run"
    (refused,) = [i for i in second.items if getattr(i, "status", None) == "denied"]
    assert "the environment variable LATE_TOKEN" in refused.output and first.ok


def test_what_a_server_was_given_is_its_own_to_receive(monkeypatch: pytest.MonkeyPatch) -> None:
    """Per server, what it may be sent back: its env and the variables passed through to it, its
    headers and bearer token (the token alone, not only the ``Bearer ...`` it was sent), and the
    password of its URL. The same values sent to another server are named by their source."""
    monkeypatch.setenv("PASSED_TOKEN", "passed-through-token-01")
    monkeypatch.setenv("WEB_BEARER", "web-bearer-token-0123")
    servers = {
        "local": McpServerConfig(command="x", env={"LOCAL_SECRET": "local-secret-0123"}, env_vars=["PASSED_TOKEN"]),
        "web": McpServerConfig(url="https://me:web-url-password-01@mcp.example/", bearer_token_env_var="WEB_BEARER",
                               http_headers={"Authorization": "Bearer web-header-token-01"}),  # fmt: skip
    }
    config = Config(mcp_servers=servers)
    sources = secret_sources(config, servers)
    kept = {name: SecretsKept(sources, given_secrets(name, cfg)) for name, cfg in servers.items()}
    values = {
        "local-secret-0123": "MCP server 'local''s env LOCAL_SECRET",
        "passed-through-token-01": "the environment variable PASSED_TOKEN",
        "web-bearer-token-0123": "MCP server 'web''s bearer token $WEB_BEARER",
        "web-url-password-01": "the password in MCP server 'web''s url",
    }
    for value in ("local-secret-0123", "passed-through-token-01"):
        assert kept["local"].find({"v": value}) is None
        assert kept["web"].find({"v": value}) == values[value]
    for value in ("web-bearer-token-0123", "web-url-password-01"):
        assert kept["web"].find({value: 1}) is None
        assert kept["local"].find({"deep": [{value: 1}]}) == values[value]
    for header in ("Bearer web-header-token-01", "web-header-token-01"):  # the credential alone is one too
        assert kept["local"].find([header]) == "MCP server 'web''s header Authorization"
        assert kept["web"].find([header]) is None
    assert kept["local"].find({"escaped": json.dumps({"inner": "web-url-password-01"})}) is not None


def test_only_headers_that_carry_a_credential_keep_a_call_from_another_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Accept = "application/json"`` is a setting: quoting it to another server is no leak, so
    the call runs, and the rollout keeps it. A custom header (``X-Workspace``) is redacted, but a
    call quoting it runs. An ``X-Api-Key``, a ``Cookie``, an ``X-Session-Id`` and a ``Token ...``
    value are credentials wherever they are."""
    monkeypatch.setenv("WEB_KEY_VAR", "web-env-api-key-0123")
    monkeypatch.setenv("WEB_REGION", "europe-west-2")
    web = McpServerConfig(url="https://mcp.example/", http_headers={
        "Accept": "application/json", "X-Workspace": "research-team", "X-Api-Key": "web-api-key-0123",
        "Cookie": "session=web-cookie-0123", "X-Auth": "Token web-scheme-token-01", "X-Session-Id": "web-session-0123",
    }, env_http_headers={"X-Env-Key": "WEB_KEY_VAR", "X-Env-Region": "WEB_REGION"})  # fmt: skip
    servers = {"web": web, "local": McpServerConfig(command="x")}
    config = Config(mcp_servers=servers)
    kept = SecretsKept(secret_sources(config, servers, credentials_only=True), given_secrets("local", servers["local"]))
    for setting in ("application/json", "research-team", "europe-west-2"):
        assert kept.find({"v": f"send {setting}"}) is None, setting
    credentials = ("web-api-key-0123", "session=web-cookie-0123", "web-scheme-token-01", "web-env-api-key-0123",
                   "web-session-0123")  # fmt: skip
    for credential in credentials:
        assert kept.find({"v": credential}) is not None, credential
    hidden = secret_sources(config, servers)  # what the rollout redacts: a custom header, never a setting
    assert {"research-team", "europe-west-2"} <= hidden.keys() and "application/json" not in hidden
