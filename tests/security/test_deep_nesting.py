"""Values nested absurdly deep, from the model or from a server, fail one call, never the turn.

A model's arguments nested hundreds of levels deep parse, but no event, approval panel or
record holding them can be written; thousands of levels deep they do not even parse. Either way
the call is refused before anything sees the value, and the model reads why. A stdio server's
reply too deep to read fails its call at once with the cause, not after the tool timeout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nbagent import Session
from nbagent.calls.arguments import MAX_ARGUMENT_DEPTH
from nbagent.config import Config
from nbagent.protocol import ApprovalDecision, CallTool, Event
from nbagent.secrets import redacted
from tests.mcp.conftest import server_cfg

TOOL = "mcp__echo__echo"


def _deep_arguments(depth: int) -> str:
    """The model's arguments: a valid call to echo, plus a list nested ``depth`` levels deep."""
    return '{"text": "hi", "x": ' + "[" * depth + "]" * depth + "}"


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def _outputs(home: Path, thread_id: str) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The rollout's lines as on disk, and its call outputs by call id."""
    lines = [json.loads(line) for line in (home / "threads" / f"{thread_id}.jsonl").read_text().splitlines()]
    items = [line["item"] for line in lines if line.get("type") == "item"]
    return lines, {i["call_id"]: i for i in items if i["type"] == "function_call_output"}


@pytest.mark.timeout(60)
async def test_deeply_nested_arguments_are_refused_and_the_model_is_told(tmp_path: Path) -> None:
    """Under ``on-request``: 300 and 3,000 levels deep are refused without an approval panel,
    the model reads which tool and why, every event can still be drawn, and the turn goes on:
    the plain call beside them is asked about, approved, run and recorded."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [
        {"tool_calls": [
            {"call_id": "call_plain", "name": TOOL, "arguments": {"text": "plain"}},
            {"call_id": "call_300", "name": TOOL, "arguments": _deep_arguments(300)},
            {"call_id": "call_3000", "name": TOOL, "arguments": _deep_arguments(3000)},
        ]},
        {"text": "done"},
    ]}))  # fmt: skip
    home = tmp_path / "home"
    config = Config(model=f"replay:{script}", approval_policy="on-request", home=str(home),
                    mcp_servers={"echo": server_cfg("echo.py")})  # fmt: skip
    asked: list[str] = []
    undrawable: list[str] = []
    async with Session(config=config, interactive=True) as session:
        redactor = session._thread.redactor()

        def front_end(event: Event) -> None:
            """What a notebook card or panel does first: redact the event; then approve."""
            try:
                redacted(event, redactor)
            except Exception as exc:  # noqa: BLE001 - the failure is what the test looks for
                undrawable.append(f"{event.msg.type}: {exc}")
            if event.msg.type == "approval_requested":
                asked.append(event.msg.call_id)
                session.submit(ApprovalDecision(call_id=event.msg.call_id, decision="approve"))

        session.subscribe(front_end)
        result = await session.run("go")
    assert result.status == "completed" and result.text == "done", (result.status, result.error)
    assert undrawable == []
    assert asked == ["call_plain"]
    lines, outputs = _outputs(home, result.thread_id)
    assert outputs["call_plain"]["status"] == "completed" and "plain" in outputs["call_plain"]["output"]
    for call_id in ("call_300", "call_3000"):
        told = outputs[call_id]["output"]
        assert outputs[call_id]["status"] == "failed", outputs[call_id]
        assert f"could not call {TOOL}" in told and f"nested deeper than {MAX_ARGUMENT_DEPTH}" in told, told
    approvals = [line["item"] for line in lines if line.get("item", {}).get("type") == "approval"]
    assert [(a["call_id"], a["decision"]) for a in approvals] == [("call_plain", "approve")]


@pytest.mark.timeout(60)
async def test_an_outside_call_with_deeply_nested_arguments_is_refused(tmp_path: Path) -> None:
    """``Session.call_tool`` (``%agent serve``'s caller) hands over arguments already parsed:
    nested deeper than the limit, the call is refused the same way and the server gets nothing."""
    home = tmp_path / "home"
    config = Config(approval_policy="full-auto", home=str(home), mcp_servers={"echo": server_cfg("echo.py")})
    async with Session(config=config) as session:
        await session._servers.ready()
        refused = await session.perform(CallTool(name=TOOL, arguments={"text": "hi", "x": _nested(150)}))
        ran = await session.perform(CallTool(name=TOOL, arguments={"text": "hi", "x": _nested(MAX_ARGUMENT_DEPTH - 1)}))
    assert refused.status == "failed" and refused.is_error, refused
    assert f"could not call {TOOL}" in refused.output and f"nested deeper than {MAX_ARGUMENT_DEPTH}" in refused.output
    assert ran.status == "completed", ran


@pytest.mark.timeout(60)
async def test_a_reply_too_deep_to_read_fails_its_call_at_once_naming_the_cause(tmp_path: Path) -> None:
    """The server's reply is nested too deep for the JSON-RPC parser: the call fails with that
    cause, naming server and tool, long before its 120 s timeout (a regression shows as this
    test's own timeout); the next call on the same server works."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [
        {"tool_calls": [{"call_id": "call_deep", "name": "mcp__deep__deep", "arguments": {}}]},
        {"tool_calls": [{"call_id": "call_plain", "name": "mcp__deep__plain", "arguments": {}}]},
        {"text": "done"},
    ]}))  # fmt: skip
    home = tmp_path / "home"
    config = Config(model=f"replay:{script}", approval_policy="full-auto", home=str(home),
                    mcp_servers={"deep": server_cfg("deep_reply.py", tool_timeout_sec=120)})  # fmt: skip
    async with Session(config=config) as session:
        result = await session.run("go")
    assert result.status == "completed" and result.text == "done", (result.status, result.error)
    _, outputs = _outputs(home, result.thread_id)
    told = outputs["call_deep"]["output"]
    assert outputs["call_deep"]["status"] == "failed", outputs["call_deep"]
    assert "MCP tool 'deep' on server 'deep'" in told and "timed out" not in told, told
    assert "a reply nbagent cannot read" in told and "nested too deep" in told, told
    assert outputs["call_plain"]["status"] == "completed" and "plain ok" in outputs["call_plain"]["output"]


@pytest.mark.timeout(60)
async def test_edited_arguments_nested_too_deep_are_refused_and_the_call_still_waits(tmp_path: Path) -> None:
    """A person's (or an outer client's) edit 300 levels deep is refused with a warning naming
    the problem; the approval still waits, and approving without the edit runs the model's call."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [
        {"tool_calls": [{"call_id": "call_1", "name": TOOL, "arguments": {"text": "as asked"}}]}, {"text": "done"},
    ]}))  # fmt: skip
    config = Config(model=f"replay:{script}", approval_policy="on-request", home=str(tmp_path / "home"),
                    mcp_servers={"echo": server_cfg("echo.py")})  # fmt: skip
    warnings: list[str] = []
    async with Session(config=config, interactive=True) as session:

        def front_end(event: Event) -> None:
            if event.msg.type == "approval_requested":
                edit = {"text": "edited", "x": _nested(300)}
                session.submit(ApprovalDecision(call_id="call_1", decision="approve", arguments=edit))
            elif event.msg.type == "warning" and "edited arguments" in event.msg.message:
                warnings.append(event.msg.message)
                session.submit(ApprovalDecision(call_id="call_1", decision="approve"))

        session.subscribe(front_end)
        result = await session.run("go")
    assert result.status == "completed", (result.status, result.error)
    assert warnings == [f"edited arguments for call_1 rejected: arguments: the arguments are nested deeper than {MAX_ARGUMENT_DEPTH} levels"]
    (output,) = [i for i in result.items if i.type == "function_call_output"]
    assert "as asked" in json.dumps(output.output) and "edited" not in json.dumps(output.output)
