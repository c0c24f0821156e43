"""A real session with real MCP servers writes the audit trail: one JSON line per decision, call
end and answer to a server's question, with the tool's identity and definition hash, and no
argument, output or answer value."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import time
from pathlib import Path

from nbagent import Session
from nbagent.core.audit import os_user
from nbagent.protocol import ApprovalDecision, ElicitationResponse, Event, ListMcpTools, McpListToolsResponse
from tests.mcp.conftest import records, server_cfg

SECRET_KEY = "audit-secret-key-9f3c"
SECRET_ANSWER = "Chez Secret 71b2"


def _call(tool: str, **arguments: object) -> dict:
    return {"name": tool, "arguments": arguments}


async def test_a_session_writes_each_decision_call_and_answer_and_no_value(home: Path, script, tmp_path: Path) -> None:
    record = Path.cwd() / "record.jsonl"  # in the workspace, where a sandboxed server may write
    servers = {"feat": server_cfg("features.py", record, trusted=True), "ask": server_cfg("elicit_resolve.py", record)}
    model = script(
        {"tool_calls": [_call("mcp__feat__read_note", key="r"), _call("mcp__feat__delete_note", key=SECRET_KEY)]},
        {"text": "ok"},
        {"tool_calls": [_call("mcp__ask__book", restaurant=SECRET_ANSWER)]},
        {"text": "booked"},
    )
    async with Session(model=model, policy="on-request", mcp_servers=servers, interactive=True) as session:

        def answer(event: Event) -> None:
            if event.msg.type == "approval_requested":
                session.submit(ApprovalDecision(call_id=event.msg.call_id, decision="approve"))
            if event.msg.type == "elicitation_requested":
                content = {"date": "2026-12-24", "seats": 4, "confirm": True, "note": SECRET_ANSWER}
                session.submit(ElicitationResponse(request_id=event.msg.request_id, action="accept",
                                                   content={k: v for k, v in content.items() if k != "note"}))

        session.subscribe(answer)
        assert (await asyncio.wait_for(session.run("read and delete"), 30)).status == "completed"
        assert (await asyncio.wait_for(session.run("book", policy="untrusted"), 30)).status == "completed"
        thread = session.snapshot().thread_id
        listed = await session.perform(ListMcpTools())
        assert isinstance(listed, McpListToolsResponse)
        hashes = {spec.raw_name: spec.definition_hash for spec in listed.tools}
    assert sorted(r["tool"] for r in records(record) if "tool" in r) == ["book", "delete_note", "read_note"]

    folder = home / "audit"
    log = folder / (time.strftime("%Y-%m-%d", time.gmtime()) + ".jsonl")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    text = log.read_text()
    assert SECRET_KEY not in text and SECRET_ANSWER not in text and "2026-12-24" not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert {line["user"] for line in lines} == {os_user()} and {line["uid"] for line in lines} == {os.getuid()}
    assert {line["thread_id"] for line in lines} == {thread}
    decisions = {line["raw_tool"]: line for line in lines if line["event"] == "codex.tool_decision"}
    assert (decisions["read_note"]["decision"], decisions["read_note"]["by"]) == ("approve", "policy")
    assert (decisions["delete_note"]["decision"], decisions["delete_note"]["by"]) == ("approve", "user")
    assert decisions["delete_note"]["server"] == "feat" and decisions["delete_note"]["policy"] == "on-request"
    assert decisions["book"]["policy"] == "untrusted"
    for line in decisions.values():
        assert line["definition_hash"] and line["definition_hash"] == hashes[line["raw_tool"]]
    results = {line["raw_tool"]: line for line in lines if line["event"] == "codex.tool_result"}
    assert set(results) == {"read_note", "delete_note", "book"}
    assert all(r["status"] == "completed" and r["success"] and r["duration_ms"] >= 0 for r in results.values())
    answer_line, = (line for line in lines if line["event"] == "nbagent.elicitation_answer")
    assert (answer_line["server"], answer_line["action"], answer_line["by"]) == ("ask", "accept", "user")
    assert answer_line["fields"] == ["confirm", "date", "seats"]
