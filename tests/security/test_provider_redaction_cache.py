"""What the model provider is sent of the tools is redacted once per tool and secret set, not on
every request, and a secret learned after a tool's spec was redacted is still hidden from it.

The catalogue is the same objects from one request to the next while no server changes its
tools, so the redacted specs are kept per spec; the key holds the secret set too, since the
secrets change without the catalogue changing (a variable named like a secret set in a cell).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from nbagent import Session
from nbagent.config import Config, McpServerConfig, ModelProviderConfig
from nbagent.protocol import ToolSpec
from nbagent.secrets import ProviderRedaction, Redactor
from tests.mcp.conftest import SERVERS

LATE = "late-learned-token-0123456789"
TOOLS = [{"name": "lookup", "description": "Look a thing up.", "inputSchema": {
    "type": "object", "properties": {"key": {"type": "string", "default": LATE}}}}]  # fmt: skip


def _default(body: dict[str, Any]) -> str:
    (tool,) = [t["function"] for t in body["tools"] if t["function"]["name"] == "mcp__svc__lookup"]
    return tool["parameters"]["properties"]["key"]["default"]


@pytest.mark.timeout(60)
async def test_a_secret_learned_after_a_schema_was_sent_is_redacted_from_it_next_time(
    openai_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LATE_API_TOKEN", raising=False)
    server = McpServerConfig(command=sys.executable, args=[str(SERVERS / "verbatim.py")],
                             env={"VERBATIM_TOOLS": json.dumps([TOOLS])})  # fmt: skip
    config = Config(
        model="m", model_provider="local", approval_policy="full-auto", home=str(tmp_path / "home"),
        model_providers={"local": ModelProviderConfig(base_url=openai_server.base_url, wire_api="chat")},
        mcp_servers={"svc": server}, api_key="sk-provider-key-0123456789",
    )
    openai_server.script([{"text": "one"}, {"text": "two"}])
    async with Session(config=config) as session:
        await session.run("first")
        monkeypatch.setenv("LATE_API_TOKEN", LATE)  # named like a secret: a secret from the next turn on
        await session.run("second")

    first, second = openai_server.requests
    assert _default(first) == LATE  # not a secret yet: the schema is sent as the server wrote it
    assert _default(second) == "[redacted]"
    assert LATE.encode() not in openai_server.bodies[1]


class _Counting(Redactor):
    """A redactor that counts its scans, to tell a request that redacted from one that did not."""

    scans = 0

    def find(self, text: str) -> str | None:
        type(self).scans += 1
        return super().find(text)


def test_an_unchanged_catalogue_is_not_scanned_again_and_new_secrets_are() -> None:
    tools = [ToolSpec(name=f"t{i}", description=f"tool {i}", parameters={"type": "object", "default": f"value-{i}-abcdefgh"})
             for i in range(128)]  # fmt: skip
    cache = ProviderRedaction()
    redactor = _Counting(["sk-unrelated-0123456789"])
    assert cache.for_provider("hi", tools, redactor) == ("hi", tools)
    scans = _Counting.scans
    assert cache.for_provider("hi", tools, redactor)[1] == tools and _Counting.scans == scans  # nothing scanned

    same = _Counting(["sk-unrelated-0123456789"])  # another redactor hiding the same: still cached
    assert cache.for_provider("hi", tools, same)[1] == tools and _Counting.scans == scans

    _, sent = cache.for_provider("hi", tools, _Counting(["sk-unrelated-0123456789", "value-7-abcdefgh"]))
    assert sent[7].parameters["default"] == "[redacted]" and tools[7].parameters["default"] == "value-7-abcdefgh"
    assert [spec is tool for spec, tool in zip(sent, tools, strict=True)].count(False) == 1
