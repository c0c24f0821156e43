"""The daily token cap an administrator sets (``[limits] max_tokens_per_day`` in
requirements.toml): checked before every model request, so a turn that crosses it ends at its
next request with a message naming the cap, its file and the day's count; no user file loosens
it. The model is the local OpenAI-compatible server, reached by the real ``openai`` client."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import nbagent.config.requirements as req
from nbagent import Session
from nbagent.config import ConfigError, load_config
from nbagent.core.usage import tokens_line
from nbagent.examples.openai_compatible_server import ScriptedChatServer
from nbagent.protocol import TokenUsage
from nbagent.store.usage import utc_day

CALL = {"text": "Adding.", "tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}],
        "usage": {"input_tokens": 900, "output_tokens": 100}}

NO_SERVER: Any = SimpleNamespace(base_url="http://127.0.0.1:9/v1", token="unused")
"""Where a config names its model server, for a config refused before any request."""


@pytest.fixture
def etc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "etc"
    folder.mkdir()
    monkeypatch.setattr(req, "SEARCH_PATH", (folder,))
    return folder


def load(tmp_path: Path, server: ScriptedChatServer, user: str = ""):
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(
        'model = "scripted-local-model"\nmodel_provider = "local"\napproval_policy = "full-auto"\n' + user +
        f'\n[model_providers.local]\nbase_url = {json.dumps(server.base_url)}\nwire_api = "chat"\nenv_key = "LOCAL_KEY"\n'
    )
    return load_config(work, environ={"NBAGENT_HOME": str(home), "LOCAL_KEY": server.token})


async def test_a_turn_that_crosses_the_cap_ends_at_its_next_request(tmp_path: Path, etc: Path) -> None:
    cap_file = etc / "requirements.toml"
    cap_file.write_text("[limits]\nmax_tokens_per_day = 1500\n")
    with ScriptedChatServer([CALL, CALL, {"text": "never sent"}]) as server:
        async with Session(config=load(tmp_path, server)) as session:
            session.register_tool(lambda a, b: a + b, name="add")
            crossed = await session.run("add, twice")
            assert len(server.requests) == 2, crossed  # 0, then 1,000 tokens used: both sent; 2,000: the third is not
            assert crossed.status == "failed" and crossed.error_code == "usage_limit"
            for named in ("2,000 tokens used today", "limits.max_tokens_per_day = 1,500", str(cap_file),
                          str(tmp_path / "home" / "usage" / f"{utc_day()}.json")):
                assert named in (crossed.error or ""), (named, crossed.error)
            again = await session.run("one more?")
            assert again.error_code == "usage_limit" and len(server.requests) == 2
        rollout = (tmp_path / "home" / "threads" / f"{crossed.thread_id}.jsonl").read_text().splitlines()
        ends = [json.loads(line) for line in rollout if '"status":"failed"' in line]
        assert ends[0]["usage"]["total_tokens"] == 2000 and "limit" in ends[0]["reason"]
    shown = tokens_line(TokenUsage(total_tokens=2000), tmp_path / "home")  # what %agent says
    assert f"2,000 today (UTC, every kernel of yours) of limits.max_tokens_per_day = 1,500 in {cap_file}" in shown


async def test_no_user_file_loosens_the_cap(tmp_path: Path, etc: Path) -> None:
    (etc / "requirements.toml").write_text("[limits]\nmax_tokens_per_day = 10\n")
    with ScriptedChatServer([{"text": "hi"}]) as server:
        try:
            config = load(tmp_path, server, user="[limits]\nmax_tokens_per_day = 1000000\n")
        except ConfigError as exc:  # refused outright, naming the key: as good as ignored
            assert "limits" in str(exc)
            config = load(tmp_path, server)
        (tmp_path / "home" / "usage").mkdir(parents=True)
        (tmp_path / "home" / "usage" / f"{utc_day()}.json").write_text('{"total_tokens": 10}')
        async with Session(config=config) as session:
            refused = await session.run("hello")
    assert refused.error_code == "usage_limit" and server.requests == []


@pytest.mark.parametrize("text", ["[limits]\nmax_tokens_per_day = 0\n", "[limits]\nmax_tokens_per_day = \"lots\"\n",
                                  "[limits]\nmax_tokens = 5\n"])
def test_a_bad_cap_is_an_error_naming_the_file_and_key(tmp_path: Path, etc: Path, text: str) -> None:
    (etc / "requirements.toml").write_text(text)
    with pytest.raises(ConfigError) as raised:  # refused as the config loads: no server is needed
        load(tmp_path, NO_SERVER)
    assert str(etc / "requirements.toml") in str(raised.value) and "limits" in str(raised.value)


async def test_an_unreadable_days_count_holds_the_cap(tmp_path: Path, etc: Path) -> None:
    (etc / "requirements.toml").write_text("[limits]\nmax_tokens_per_day = 100000\n")
    with ScriptedChatServer([{"text": "hi"}]) as server:
        config = load(tmp_path, server)
        day = tmp_path / "home" / "usage" / f"{utc_day()}.json"
        day.parent.mkdir(parents=True)
        day.write_text("garbage")
        async with Session(config=config) as session:
            refused = await session.run("hello")
    assert refused.error_code == "usage_limit" and server.requests == []
    assert str(day) in (refused.error or "") and day.read_text() == "garbage"
