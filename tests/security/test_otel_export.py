"""The audit trail exported as OpenTelemetry log records to a real OTLP/HTTP receiver on
127.0.0.1: Codex's event names and fields, the collector's header delivered, and no secret of
the session (the model key, the collector's own key, a secret the model put in a call's
arguments or the user put in the prompt) in any record or export body."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import nbagent.config.requirements as req
from nbagent import Session
from nbagent.config import ConfigError, load_config
from nbagent.examples.openai_compatible_server import ScriptedChatServer
from tests.security.otlp_receiver import OtlpReceiver

COLLECTOR_KEY = "otlp-collector-key-5b1d0c9e7a"

NO_SERVER: Any = SimpleNamespace(base_url="http://127.0.0.1:9/v1", token="unused")
"""Where a config names its model server, for a config refused before any request."""


def config_text(server: ScriptedChatServer, otel: str) -> str:
    return ('model = "scripted-local-model"\nmodel_provider = "local"\napproval_policy = "full-auto"\n'
            f'[model_providers.local]\nbase_url = {json.dumps(server.base_url)}\nwire_api = "chat"\n'
            'env_key = "LOCAL_KEY"\n' + otel)


def load(tmp_path: Path, text: str, env: dict[str, str] | None = None):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(exist_ok=True)
    work.mkdir(exist_ok=True)
    (home / "config.toml").write_text(text)
    return load_config(work, environ={"NBAGENT_HOME": str(home), **(env or {})})


@pytest.fixture(autouse=True)
def no_admin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(req, "SEARCH_PATH", (tmp_path / "etc",))


async def test_tool_calls_prompts_and_tokens_arrive_as_codex_events_without_secrets(tmp_path: Path) -> None:
    with OtlpReceiver() as rx, ScriptedChatServer([]) as server:
        key = server.token
        server.replies += [{"text": "Looking.", "tool_calls": [{"name": "lookup", "arguments": {"query": key}}]},
                           {"text": "Found it."}]
        otel = ('[otel]\nenvironment = "test"\nlog_user_prompt = true\n[otel.exporter.otlp-http]\n'
                f'endpoint = {json.dumps(rx.endpoint)}\nprotocol = "binary"\n'
                f'headers = {{ "x-collector-key" = "{COLLECTOR_KEY}" }}\n')
        config = load(tmp_path, config_text(server, otel), {"LOCAL_KEY": key})
        async with Session(config=config) as session:
            session.register_tool(lambda query: "42", name="lookup")
            result = await session.run(f"find the answer; my key is {key}")
        assert result.text == "Found it."
    assert rx.headers and all(h.get("x-collector-key") == COLLECTOR_KEY for h in rx.headers)
    assert {"service.name": "nbagent", "env": "test"}.items() <= rx.resources[0].items()

    (decision,) = rx.named("codex.tool_decision")
    assert (decision["tool"], decision["decision"], decision["by"], decision["policy"]) == ("lookup", "approve", "policy", "full-auto")
    assert decision["conversation.id"] == result.thread_id and decision["event.name"] == "codex.tool_decision"
    (outcome,) = rx.named("codex.tool_result")
    assert (outcome["tool"], outcome["status"], outcome["success"]) == ("lookup", "completed", True)
    assert outcome["call_id"] == decision["call_id"] and outcome["duration_ms"] >= 0
    (prompt,) = rx.named("codex.user_prompt")
    assert prompt["prompt_length"] == len(f"find the answer; my key is {key}") and "find the answer" in prompt["prompt"]
    tokens = rx.named("codex.sse_event")
    assert len(tokens) == 2 and all(t["input_token_count"] > 0 and t["output_token_count"] > 0 for t in tokens)

    exported = b"".join(rx.bodies)
    for secret in (key, COLLECTOR_KEY):
        assert secret.encode() not in exported
    assert "query" not in json.dumps(rx.records)  # never a call's arguments
    audit = "".join(p.read_text() for p in (tmp_path / "home" / "audit").glob("*.jsonl"))
    threads = "".join(p.read_text() for p in (tmp_path / "home" / "threads").glob("*.jsonl"))
    assert "codex.tool_result" in audit and COLLECTOR_KEY not in audit + threads


async def test_a_prompt_is_not_exported_unless_log_user_prompt(tmp_path: Path) -> None:
    with OtlpReceiver() as rx, ScriptedChatServer([{"text": "ok"}]) as server:
        otel = f'[otel.exporter.otlp-http]\nendpoint = {json.dumps(rx.endpoint)}\n'
        config = load(tmp_path, config_text(server, otel), {"LOCAL_KEY": server.token})
        async with Session(config=config) as session:
            await session.run("a private question")
    (prompt,) = rx.named("codex.user_prompt")
    assert prompt["prompt"] == "[REDACTED]" and prompt["prompt_length"] == len("a private question")
    assert b"private question" not in b"".join(rx.bodies)
    assert rx.resources[0]["env"] == "dev"


async def test_an_unreachable_collector_never_fails_a_turn(tmp_path: Path) -> None:
    with ScriptedChatServer([{"text": "ok"}]) as server:
        otel = '[otel.exporter.otlp-http]\nendpoint = "http://127.0.0.1:9/v1/logs"\n'
        config = load(tmp_path, config_text(server, otel), {"LOCAL_KEY": server.token})
        async with Session(config=config) as session:
            result = await session.run("hello")
    assert result.status == "completed"


async def test_without_the_sdk_a_session_warns_once_and_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("opentelemetry.sdk._logs", "opentelemetry.exporter.otlp.proto.http._log_exporter"):
        monkeypatch.setitem(sys.modules, module, None)  # as when the otel extra is not installed
    with ScriptedChatServer([{"text": "ok"}]) as server:
        otel = '[otel.exporter.otlp-http]\nendpoint = "http://127.0.0.1:9/v1/logs"\n'
        config = load(tmp_path, config_text(server, otel), {"LOCAL_KEY": server.token})
        session, warned = Session(config=config), []
        session.subscribe(lambda e: e.msg.type == "warning" and warned.append(e.msg.message))
        async with session:
            result = await session.run("hello")
    assert result.status == "completed"
    assert [w for w in warned if "[otel]" in w] == [
        "[otel] names an exporter, but opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http are not installed "
        "(pip install 'nbagent[otel]'): the audit trail is not exported"]


@pytest.mark.parametrize(("otel", "named"), [
    ('[otel.exporter.otlp-grpc]\nendpoint = "http://127.0.0.1:4317"\n', "otlp-grpc"),
    ('[otel.exporter.otlp-http]\nendpoint = "http://127.0.0.1:4318/v1/logs"\nprotocol = "json"\n', "protocol"),
    ('[otel.exporter.otlp-http]\nendpoint = "http://user:pw@127.0.0.1:4318/v1/logs"\n', "credentials go in headers"),
    ('[otel.exporter.otlp-http]\nendpoint = "file:///etc/passwd"\n', "endpoint"),
    ('[otel]\nlog_user_prompt = "yes"\n', "log_user_prompt"),
])
def test_a_bad_otel_table_is_an_error_naming_the_key(tmp_path: Path, otel: str, named: str) -> None:
    with pytest.raises(ConfigError) as raised:  # refused as the config loads: no server is needed
        load(tmp_path, config_text(NO_SERVER, otel))
    assert named in str(raised.value) and "config.toml" in str(raised.value)
