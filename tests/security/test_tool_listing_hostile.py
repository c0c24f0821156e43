"""Tool listings no SDK would send, from a real stdio server that writes its JSON as given
(tests/servers/verbatim.py): two tools of one name, and hints spelled as strings.

The server records every call it runs, so "it ran" and "it did not" are the server's word."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from nbagent import Session
from nbagent.protocol import Event
from tests.core.conftest import home, script  # noqa: F401 - fixtures
from tests.mcp.conftest import records, server_cfg

OBJECT = {"type": "object"}


def verbatim(record: Path, tools: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    return {"s": server_cfg("verbatim.py", record, env={"VERBATIM_TOOLS": json.dumps([tools])}, **kw)}


def call(name: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": f"mcp__s__{name}", "arguments": {}}]}


async def run(model: str, servers: dict[str, Any], **kw: Any) -> tuple[Any, list[str]]:
    """One turn without a front end; the result and the warnings the session gave."""
    warnings: list[str] = []

    def seen(event: Event) -> None:
        if event.msg.type == "warning":
            warnings.append(event.msg.message)

    async with Session(model=model, mcp_servers=servers, **kw) as session:
        session.subscribe(seen)
        result = await asyncio.wait_for(session.run("go"), 60)
    return result, warnings


async def test_a_second_tool_of_the_same_name_is_left_out_with_a_warning(
    home: Path, script, tmp_path: Path  # noqa: F811
) -> None:
    """The first ``dup`` is the tool: a call runs it, checked against its own (absent) output
    schema, not the second one's, which would refuse the text it answers with."""
    record = tmp_path / "record.jsonl"
    structured = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    tools = [
        {"name": "dup", "description": "the first", "inputSchema": OBJECT},
        {"name": "dup", "description": "the second", "inputSchema": OBJECT, "outputSchema": structured},
    ]
    result, warnings = await run(script(call("dup"), {"text": "ok"}), verbatim(record, tools), policy="full-auto")
    output = next(i for i in result.items if i.type == "function_call_output")
    assert output.status == "completed" and "dup ran" in output.output, output.output
    assert [r["tool"] for r in records(record)] == ["dup"]
    assert any("'s'" in w and "'dup'" in w and "more than once" in w for w in warnings), warnings


@pytest.mark.parametrize("setting", ["trusted", "writes"])
@pytest.mark.parametrize("hints", [
    {"readOnlyHint": "true", "destructiveHint": "false"},
    {"readOnlyHint": "true"},
    {"readOnlyHint": 1, "destructiveHint": 0},
])  # fmt: skip
async def test_a_hint_that_is_not_a_json_boolean_counts_as_absent(
    home: Path, script, tmp_path: Path, setting: str, hints: dict[str, Any]  # noqa: F811
) -> None:
    """A trusted server's read-only tool runs unasked, and so does one under ``writes``; the
    same hints as strings (or numbers) say nothing, so with no one to ask the call is declined,
    and a warning names the server, the tool and the hint."""
    record = tmp_path / "record.jsonl"
    tools = [{"name": "wipe", "description": "says it is harmless", "inputSchema": OBJECT, "annotations": hints}]
    kw = {"trusted": True} if setting == "trusted" else {"default_tools_approval_mode": "writes"}
    result, warnings = await run(script(call("wipe"), {"text": "ok"}), verbatim(record, tools, **kw), policy="on-request")
    assert records(record) == []
    decision = next(i for i in result.items if i.type == "approval")
    assert (decision.decision, decision.by) == ("deny", "policy")
    assert "does not say it is read-only" in (decision.message or ""), decision.message
    assert any("'s'" in w and "'wipe'" in w and "readOnlyHint" in w and "not a boolean" in w for w in warnings), warnings


async def test_hints_that_are_json_booleans_still_count(home: Path, script, tmp_path: Path) -> None:  # noqa: F811
    record = tmp_path / "record.jsonl"
    tools = [{"name": "look", "description": "read-only", "inputSchema": OBJECT,
              "annotations": {"readOnlyHint": True, "destructiveHint": False}}]  # fmt: skip
    result, warnings = await run(script(call("look"), {"text": "ok"}), verbatim(record, tools, trusted=True),
                                 policy="on-request")  # fmt: skip
    assert [r["tool"] for r in records(record)] == ["look"]
    assert not any("not a boolean" in w for w in warnings)
