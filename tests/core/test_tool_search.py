"""A catalogue bigger than one request may carry, over a real MCP server with 300 tools, the real
``openai`` client and the fake OpenAI server that refuses more than 128 tools as OpenAI does."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.config import Config, ConfigError, ModelProviderConfig, load_config
from nbagent.models import chat, responses
from nbagent.protocol import ApprovalDecision, Compact, ContextCompacted, Event
from tests.core.test_openai_session import sent_outputs
from tests.mcp.conftest import records, server_cfg
from tests.trusting import TRUSTED

FOUND = "mcp__many__open_pull_request"


def config_for(server, wire_api: str, home: Path, record: Path, **kw) -> Config:
    config = Config(
        model="test-model",
        model_provider="local",
        model_providers={"local": ModelProviderConfig(base_url=server.base_url, wire_api=wire_api, request_max_retries=0)},
        approval_policy=kw.pop("policy", "full-auto"),
        home=str(home),
        mcp_servers={"many": server_cfg("many_tools.py", record, env=kw.pop("env", {}))},
        **kw,
    )
    config.api_key = "sk-test"
    return config


def tool_names(body: dict) -> list[str]:
    return [t.get("name") or t["function"]["name"] for t in body.get("tools", [])]


def call(name: str, **arguments) -> dict:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


@pytest.fixture(params=["responses", "chat"])
def wire_api(request: pytest.FixtureRequest) -> str:
    return request.param


async def test_every_tool_in_one_request_is_refused_past_128(openai_server, home: Path, tmp_path: Path) -> None:
    """What a user hit before the cap: the whole catalogue in the request, and a failed turn."""
    openai_server.script([{"text": "never"}])
    config = config_for(openai_server, "responses", home, tmp_path / "r.jsonl", max_model_tools=1000)
    async with Session(config=config) as session:
        result = await asyncio.wait_for(session.run("open a pull request"), 60)
    assert result.status == "failed" and "array too long" in (result.error or "")
    assert len(openai_server.requests[0]["tools"]) == 301


async def test_the_model_finds_a_tool_by_searching_calls_it_and_still_sees_it_after_resume(
    openai_server, home: Path, tmp_path: Path, wire_api: str
) -> None:
    record = tmp_path / "record.jsonl"
    config = config_for(openai_server, wire_api, home, record)
    openai_server.script([call("search_tools", query="open a pull request"), call(FOUND, id="7"), {"text": "opened"}])
    async with Session(config=config) as session:
        result = await asyncio.wait_for(session.run("open a pull request"), 60)
        assert len(session._tools()) == 301
    assert result.status == "completed", result.error
    first, second, third = (tool_names(body) for body in openai_server.requests)
    assert len(first) <= 128 and "search_tools" in first and FOUND not in first
    assert FOUND in second and len(second) <= 128
    assert FOUND in third
    instructions = json.dumps(openai_server.requests[0])
    assert "search_tools" in instructions and "More tools exist" in instructions
    search_output = list(sent_outputs(openai_server.requests[1], wire_api).values())[0]
    assert search_output.splitlines()[1].startswith(f"1. {FOUND} (MCP server 'many')")
    assert [(r["tool"], r["arguments"]) for r in records(record)] == [("open_pull_request", {"id": "7"})]

    openai_server.reset()
    openai_server.script([{"text": "still here"}])
    async with Session(config=config, thread=result.thread_id) as session:
        again = await asyncio.wait_for(session.run("and now?"), 60)
    assert again.status == "completed", again.error
    assert FOUND in tool_names(openai_server.requests[0])


async def test_a_found_tool_stays_in_view_after_the_thread_is_compacted(openai_server, home: Path, tmp_path: Path) -> None:
    config = config_for(openai_server, "responses", home, tmp_path / "r.jsonl")
    openai_server.script([call("search_tools", query="pull request"), {"text": "found it"}, {"text": "next"}])
    openai_server.respond = lambda body: {"text": "we found open_pull_request"} if body["instructions"].startswith(
        "You are compacting") else None
    async with Session(config=config) as session:
        await asyncio.wait_for(session.run("find the pull request tool"), 60)
        assert isinstance(await session.perform(Compact()), ContextCompacted)
        result = await asyncio.wait_for(session.run("go on"), 60)
    assert result.status == "completed", result.error
    last = openai_server.requests[-1]
    assert "Summary of the earlier part" in json.dumps(last["input"]) and FOUND in tool_names(last)


async def test_under_the_cap_the_request_carries_the_catalogue_unchanged(
    openai_server, home: Path, tmp_path: Path, wire_api: str
) -> None:
    config = config_for(openai_server, wire_api, home, tmp_path / "r.jsonl", env={"MANY_TOOLS": "5"})
    openai_server.script([call("add", a=1, b=2), {"text": "3"}])
    async with Session(config=config) as session:
        session.register_tool(lambda a, b: a + b, name="add")
        result = await asyncio.wait_for(session.run("add"), 60)
        specs = list(session._tools())
    assert result.status == "completed", result.error
    wire = responses.to_tools(specs) if wire_api == "responses" else chat.to_tools(specs)
    assert [body["tools"] for body in openai_server.requests] == [wire, wire]
    assert "search_tools" not in json.dumps(openai_server.requests)


async def test_a_tool_never_in_view_is_still_asked_about_before_it_runs(
    openai_server, home: Path, tmp_path: Path
) -> None:
    record = tmp_path / "record.jsonl"
    config = config_for(openai_server, "responses", home, record, policy="on-request")
    openai_server.script([call("mcp__many__delete_invoice_3", id="x"), {"text": "denied"}])
    asked: list[str] = []
    async with Session(config=config, interactive=True) as session:

        def deny(event: Event) -> None:
            if event.msg.type == "approval_requested":
                asked.append(event.msg.raw_tool)
                session.submit(ApprovalDecision(call_id=event.msg.call_id, decision="deny"))

        session.subscribe(deny)
        result = await asyncio.wait_for(session.run("delete invoice 3"), 60)
    assert "mcp__many__delete_invoice_3" not in tool_names(openai_server.requests[0])
    assert asked == ["delete_invoice_3"] and records(record) == []
    assert "denied" in list(sent_outputs(openai_server.requests[1], "responses").values())[0]
    assert result.status == "completed"


def test_a_cap_below_two_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / "nbagent.toml").write_text("max_model_tools = 1\n")
    with pytest.raises(ConfigError, match="max_model_tools"):
        load_config(tmp_path, environ={**TRUSTED, "NBAGENT_HOME": str(tmp_path / "home")})


async def test_a_wrong_name_past_the_cap_points_to_the_search_not_to_every_name(
    openai_server, home: Path, tmp_path: Path
) -> None:
    openai_server.script([call("mcp__many__open_a_pr", id="7"), {"text": "sorry"}])
    config = config_for(openai_server, "chat", home, tmp_path / "r.jsonl")
    async with Session(config=config) as session:
        result = await asyncio.wait_for(session.run("open a pull request"), 60)
    assert result.status == "completed", result.error
    output = list(sent_outputs(openai_server.requests[1], "chat").values())[0]
    assert "unknown tool 'mcp__many__open_a_pr'" in output and "call search_tools" in output, output
    assert FOUND not in output and len(output) < 300, "the error lists the catalogue"


async def test_python_tools_past_the_cap_are_named_to_the_user_and_found_by_search(
    openai_server, home: Path, tmp_path: Path
) -> None:
    """Python tools alone past the cap: the user is told which ones requests leave out, once, and
    the model still reaches one by searching (it used to be dropped without a word)."""
    config = config_for(openai_server, "responses", home, tmp_path / "r.jsonl", env={"MANY_TOOLS": "5"}, max_model_tools=4)
    openai_server.script([call("search_tools", query="convert celsius"), call("celsius_to_kelvin", c=1), {"text": "274"},
                          {"text": "again"}])
    warnings: list[str] = []
    async with Session(config=config) as session:
        session.subscribe(lambda e: warnings.append(e.msg.message) if e.msg.type == "warning" else None)
        for n in range(5):
            session.register_tool((lambda k: lambda: k)(n), name=f"helper_{n}", description="Helps with nothing in particular.")
        session.register_tool(lambda c: c + 273, name="celsius_to_kelvin", description="Convert Celsius to Kelvin.")
        result = await asyncio.wait_for(session.run("convert 1 celsius"), 60)
        await asyncio.wait_for(session.run("once more"), 60)
    assert result.status == "completed", result.error
    assert len(warnings) == 1, warnings
    assert "4 native and Python tools" in warnings[0] and "helper_2, helper_3, helper_4, celsius_to_kelvin" in warnings[0]
    first, second = (tool_names(body) for body in openai_server.requests[:2])
    assert "celsius_to_kelvin" not in first and "celsius_to_kelvin" in second and len(second) <= 4
    assert list(sent_outputs(openai_server.requests[2], "responses").values())[-1] == "274"
