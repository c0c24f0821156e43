"""Hostile values in configs written for Codex or Claude Code: expansion never reaches further
than the one variable named, errors and warnings never carry a value, and Codex's ``writes``
mode relaxes nothing but a tool's own ``readOnlyHint``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.config import ConfigError, load_config
from nbagent.protocol import ApprovalDecision, Event
from tests.config.test_mcp_json import mcp_json
from tests.mcp.conftest import records, server_cfg
from tests.trusting import TRUSTED

SECRET = "sk-live-0123456789abcdef"


def user_file(tmp_path: Path, text: str) -> Path:
    """``$NBAGENT_HOME/config.toml`` with ``text``; returns the home."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(text)
    return home


@pytest.mark.parametrize(
    "planted",
    ["${SECRET_KEY}", "${SECRET_KEY:-x}", "x${SECRET_KEY}y", "$${SECRET_KEY}", "${${SECRET_KEY}}", "${PLANTED}"],
)
def test_config_expanded_value_is_never_expanded_again(tmp_path: Path, planted: str) -> None:
    """A variable whose value looks like ``${SECRET_KEY}`` (set by someone else, or by a server's
    own documentation) stays that text: it never pulls in another variable's value."""
    work = mcp_json(tmp_path, {"s": {"type": "http", "url": "https://example.com/mcp?q=${PLANTED}",
                                     "headers": {"X-Query": "${PLANTED}"}}})  # fmt: skip
    environ = {**TRUSTED, "NBAGENT_HOME": str(tmp_path / "home"), "PLANTED": planted, "SECRET_KEY": SECRET}
    s = load_config(work, environ=environ).mcp_servers["s"]
    assert s.url == f"https://example.com/mcp?q={planted}"
    assert s.http_headers == {"X-Query": planted}


@pytest.mark.parametrize(
    "value",
    ["Bearer ${TOKEN}${MISSING}", "${MISSING}${TOKEN}", "${TOKEN:-${MISSING}}x${MISSING}", "${MISSING:-}${TOKEN}${ALSO_MISSING}"],
)
def test_config_missing_variable_error_carries_no_value(tmp_path: Path, value: str) -> None:
    work = mcp_json(tmp_path, {"s": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": value}}})
    with pytest.raises(ConfigError) as err:
        load_config(work, environ={**TRUSTED, "NBAGENT_HOME": str(tmp_path / "home"), "TOKEN": SECRET})
    message = str(err.value)
    assert "MISSING is not set" in message and "mcpServers.s.headers" in message
    assert SECRET not in message and "Bearer" not in message


@pytest.mark.parametrize(
    "table",
    [
        f'url = "https://x/mcp"\nbearer_token = "{SECRET}"',
        f'command = "x"\nbearer_token = "{SECRET}"',
        f'url = "https://x/mcp"\nbearer_token = "{SECRET}"\nhttp_headers = {{ A = 1 }}',
        f'url = "https://x/mcp"\nhttp_headers_helper = "{SECRET}"\nenvironment_id = 3',
    ],
)
def test_config_refused_codex_value_is_not_echoed(tmp_path: Path, table: str) -> None:
    home = user_file(tmp_path, f"[mcp_servers.a]\n{table}\n")
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path, environ={**TRUSTED, "NBAGENT_HOME": str(home)})
    assert SECRET not in str(err.value) and str(err.value).startswith(str(home / "config.toml"))


def test_config_ignored_key_warnings_carry_no_secret_value(tmp_path: Path) -> None:
    home = user_file(
        tmp_path,
        f'[mcp_servers.a]\nurl = "https://x/mcp"\nhttp_headers_helper = "print-token {SECRET}"\n'
        f'env = {{ TOKEN = "{SECRET}" }}\nsupports_parallel_tool_calls = true\n'
        f'[mcp_servers.a.tools.t]\noutput_token_limit = 10\n',
    )
    warnings = load_config(tmp_path, environ={**TRUSTED, "NBAGENT_HOME": str(home)}).warnings
    assert len(warnings) == 4 and not any(SECRET in w for w in warnings), warnings


@pytest.mark.parametrize("policy", ["on-request", "never"])
async def test_writes_mode_still_asks_for_a_tool_without_annotations(tmp_path: Path, monkeypatch, policy: str) -> None:
    """``writes`` takes a server's ``readOnlyHint: true`` at its word; a tool that says nothing
    or says it writes is asked about as before (declined under ``never``), and a denial runs nothing."""
    monkeypatch.delenv("NBAGENT_MODEL", raising=False)
    record = tmp_path / "record.jsonl"
    script = tmp_path / "script.json"
    calls = [{"name": "mcp__feat__" + t, "arguments": a} for t, a in
             (("env_keys", {}), ("delete_note", {"key": "d"}), ("read_note", {"key": "r"}))]  # fmt: skip
    script.write_text(json.dumps({"responses": [{"tool_calls": calls}, {"text": "ok"}]}))
    servers = {"feat": server_cfg("features.py", record, default_tools_approval_mode="writes")}
    asked: list[str] = []
    async with Session(model=f"replay:{script}", policy=policy, cwd=tmp_path, home=tmp_path / "home",
                       mcp_servers=servers, interactive=True) as session:  # fmt: skip

        def deny(event: Event) -> None:
            if event.msg.type == "approval_requested":
                asked.append(event.msg.raw_tool)
                session.submit(ApprovalDecision(call_id=event.msg.call_id, decision="deny"))

        session.subscribe(deny)
        await asyncio.wait_for(session.run("go"), 60)
    assert [r["tool"] for r in records(record)] == ["read_note"]
    assert sorted(asked) == (["delete_note", "env_keys"] if policy == "on-request" else [])
