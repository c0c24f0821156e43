"""What a server says about itself reaches the model provider redacted, and the inspector shows
exactly what was sent.

A server handed a token in its ``env`` puts it in its instructions, a tool's description, its
schema (a property's name, default and enum), its title and a tool's name. The bytes the real
``openai`` client sends to the local provider hold none of it; the tool still runs by its
name; the tool whose name holds the token is left out with a warning naming the server; and
``inspect request`` shows the instructions and tools the provider received, byte for byte.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from nbagent import Session
from nbagent.config import Config, McpServerConfig, ModelProviderConfig
from nbagent.protocol import Event
from nbagent.sandbox import SandboxWorkspaceWrite
from tests.mcp.conftest import SERVERS, records

TOKEN = "svc-own-token-0123456789"
SCHEMA = {
    "type": "object",
    "properties": {
        "q": {"type": "string", "description": "send $MY_API_TOKEN as the key"},
        "key": {"type": "string", "default": "$MY_API_TOKEN", "enum": ["public", "$MY_API_TOKEN"]},
        "x_$MY_API_TOKEN": {"type": "string"},
    },
    "required": ["q"],
}
TOOLS = [
    {"name": "lookup", "title": "Lookup with $MY_API_TOKEN", "description": "Look up with Bearer $MY_API_TOKEN.",
     "inputSchema": SCHEMA, "annotations": {"title": "uses $MY_API_TOKEN"}},
    {"name": "get_$MY_API_TOKEN", "description": "a tool named after the token", "inputSchema": {"type": "object"}},
]  # fmt: skip


def _sent(body: dict[str, Any], wire_api: str) -> tuple[str, list[dict[str, Any]]]:
    """The instructions and tools (name, description, parameters) a request body carried."""
    if wire_api == "chat":
        instructions = next(m["content"] for m in body["messages"] if m["role"] == "system")
        tools = [t["function"] for t in body.get("tools", [])]
    else:
        instructions, tools = body["instructions"], body.get("tools", [])
    return instructions, [{k: t[k] for k in ("name", "description", "parameters")} for t in tools]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("wire_api", ["responses", "chat"])
async def test_a_servers_own_token_never_reaches_the_provider_and_inspect_shows_what_was_sent(
    openai_server, tmp_path: Path, wire_api: str
) -> None:
    record = tmp_path / "record.jsonl"
    server = McpServerConfig(command=sys.executable, args=[str(SERVERS / "verbatim.py")], env={
        "MY_API_TOKEN": TOKEN, "RECORD_FILE": str(record), "VERBATIM_TOOLS": json.dumps([TOOLS]),
        "VERBATIM_INSTRUCTIONS": "Always pass the key $MY_API_TOKEN.",
    }, sandbox_workspace_write=SandboxWorkspaceWrite(writable_roots=[str(tmp_path)]))  # fmt: skip
    config = Config(
        model="m", model_provider="local", approval_policy="full-auto", home=str(tmp_path / "home"),
        model_providers={"local": ModelProviderConfig(base_url=openai_server.base_url, wire_api=wire_api)},
        mcp_servers={"svc": server},
    )
    config.api_key = "sk-provider-key-0123456789"
    openai_server.script([
        {"tool_calls": [{"name": "mcp__svc__lookup", "arguments": {"q": "weather"}}]}, {"text": "done"},
    ])  # fmt: skip
    events: list[Event] = []
    async with Session(config=config) as session:
        session.subscribe(events.append)
        result = await session.run("look it up")
        shown = session._inspector.last_request(result.thread_id)
    assert result.text == "done", (result.status, result.error)

    assert openai_server.bodies and all(TOKEN.encode() not in body for body in openai_server.bodies)
    instructions, tools = _sent(openai_server.requests[-1], wire_api)
    assert "Always pass the key [redacted]." in instructions
    (lookup,) = [t for t in tools if t["name"].startswith("mcp__svc__")]
    assert lookup["name"] == "mcp__svc__lookup" and lookup["description"] == "Look up with Bearer [redacted]."
    key = lookup["parameters"]["properties"]["key"]
    assert key["default"] == "[redacted]" and key["enum"] == ["public", "[redacted]"]
    assert "x_[redacted]" in lookup["parameters"]["properties"]

    assert [r["tool"] for r in records(record)] == ["lookup"]  # the redacted tool still runs by its name
    warnings = [e.msg.message for e in events if e.msg.type == "warning"]
    assert any("MCP server 'svc'" in w and "MY_API_TOKEN" in w and "left out" in w for w in warnings), warnings

    assert shown is not None
    assert (shown.instructions, [{k: t[k] for k in ("name", "description", "parameters")} for t in shown.tools]) == (
        instructions, tools
    )


def _config(openai_server, tmp_path: Path, tools: list[dict[str, Any]], instructions: str = "", **kw: Any) -> Config:
    server = McpServerConfig(command=sys.executable, args=[str(SERVERS / "verbatim.py")], env={
        "MY_API_TOKEN": TOKEN, "VERBATIM_TOOLS": json.dumps([tools]), "VERBATIM_INSTRUCTIONS": instructions,
    })  # fmt: skip
    return Config(
        model="m", model_provider="local", approval_policy="full-auto", home=str(tmp_path / "home"),
        model_providers={"local": ModelProviderConfig(base_url=openai_server.base_url, wire_api="chat")},
        mcp_servers={"svc": server}, api_key="sk-provider-key-0123456789", **kw,
    )


@pytest.mark.timeout(60)
async def test_a_token_cut_by_the_instructions_cap_sends_no_part_of_it(openai_server, tmp_path: Path) -> None:
    """A server's instructions are capped; the cap falls inside the token, which is redacted
    first, so not even its head is sent."""
    head = "Always pass the key "
    config = _config(openai_server, tmp_path, [], f"{head}$MY_API_TOKEN.", server_instructions_max_bytes=len(head) + 12)
    openai_server.script([{"text": "ok"}])
    async with Session(config=config) as session:
        await session.run("hi")
    (system,) = [m["content"] for m in openai_server.requests[0]["messages"] if m["role"] == "system"]
    assert f"{head}[redacted]"[: len(head) + 8] in system and TOKEN[:12] not in system


@pytest.mark.timeout(60)
async def test_a_token_cut_by_what_search_tools_shows_of_a_description_sends_no_part_of_it(
    openai_server, tmp_path: Path
) -> None:
    """Past ``max_model_tools`` the model finds tools with ``search_tools``, which shows the first
    300 characters of each description: the token straddles that cut."""
    tools = [{"name": f"tool{i}", "description": f"{'x' * 290} $MY_API_TOKEN", "inputSchema": {"type": "object"}}
             for i in range(3)]  # fmt: skip
    config = _config(openai_server, tmp_path, tools, max_model_tools=2)
    openai_server.script([{"tool_calls": [{"name": "search_tools", "arguments": {"query": "tool0"}}]}, {"text": "ok"}])
    async with Session(config=config) as session:
        await session.run("find a tool")
    (found,) = [m["content"] for m in openai_server.requests[1]["messages"] if m["role"] == "tool"]
    assert "mcp__svc__tool0" in found and "[redac" in found and TOKEN[:6] not in found, found
