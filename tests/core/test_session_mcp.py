"""The session with real MCP servers over stdio: approvals, "always", elicitation answers,
and the catalogue command. The servers record every execution they receive."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.core.handlers import OpRejected
from nbagent.protocol import ApprovalDecision, CallTool, ElicitationResponse, Event, EventMsg
from tests.mcp.conftest import records, server_cfg
from tests.waiting import until

FEATURES = "mcp__feat__"


def call(tool: str, **arguments) -> dict:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


@pytest.mark.parametrize("policy", ["untrusted", "on-request", "never", "full-auto"])
@pytest.mark.parametrize("trusted", [True, False])
async def test_real_server_executes_only_what_was_decided(home: Path, script, tmp_path: Path, policy, trusted) -> None:
    record = tmp_path / "record.jsonl"
    servers = {"feat": server_cfg("features.py", record, trusted=trusted)}
    model = script(
        {"tool_calls": [
            {"name": FEATURES + "read_note", "arguments": {"key": "r"}},
            {"name": FEATURES + "delete_note", "arguments": {"key": "d"}},
        ]},
        {"text": "ok"},
    )
    asked: list[str] = []
    async with Session(model=model, policy=policy, mcp_servers=servers, interactive=True) as session:

        def deny_all(event: Event) -> None:
            if event.msg.type == "approval_requested":
                asked.append(event.msg.raw_tool)
                session.submit(ApprovalDecision(call_id=event.msg.call_id, decision="deny"))

        session.subscribe(deny_all)
        await asyncio.wait_for(session.run("read and delete"), 30)
    executed = sorted(r["tool"] for r in records(record))
    read_free = policy == "full-auto" or (policy in ("on-request", "never") and trusted)
    expected = sorted((["read_note"] if read_free else []) + (["delete_note"] if policy == "full-auto" else []))
    assert executed == expected
    if policy in ("untrusted", "on-request"):
        assert sorted(asked) == sorted({"read_note", "delete_note"} - set(executed))
    else:
        assert asked == []


async def test_always_is_written_to_the_project_config_and_the_next_session_does_not_ask(
    home: Path, script, tmp_path: Path
) -> None:
    record = tmp_path / "record.jsonl"
    project = Path.cwd() / "nbagent.toml"
    project.write_text(
        "# my project\n[mcp_servers.feat]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(Path(__file__).parents[1] / 'servers' / 'features.py'))}]\n"
        f"env = {{ RECORD_FILE = {json.dumps(str(record))} }}\n"
        f"sandbox_workspace_write = {{ writable_roots = [{json.dumps(str(record.parent))}] }}\n"
    )
    asked: list[str] = []
    for turn in range(2):
        model = script(call(FEATURES + "delete_note", key=str(turn)), {"text": "ok"})
        async with Session(model=model, interactive=True) as session:

            def always(event: Event) -> None:
                if event.msg.type == "approval_requested":
                    asked.append(event.msg.call_id)
                    session.submit(ApprovalDecision(call_id=event.msg.call_id, decision="always"))

            session.subscribe(always)
            await asyncio.wait_for(session.run("delete"), 30)
    config = tomllib.loads(project.read_text())
    assert project.read_text().startswith("# my project")
    assert config["mcp_servers"]["feat"]["tools"]["delete_note"]["approval_mode"] == "approve"
    assert len(asked) == 1
    assert [r["key"] for r in records(record)] == ["0", "1"]


async def test_an_elicitation_answer_is_validated_and_reaches_the_server_exactly(
    home: Path, script, tmp_path: Path
) -> None:
    record = tmp_path / "record.jsonl"
    servers = {"ask": server_cfg("elicit_resolve.py", record)}
    model = script(call("mcp__ask__book", restaurant="Chez Py"), {"text": "booked"})
    warnings: list[str] = []
    async with Session(model=model, policy="full-auto", mcp_servers=servers, interactive=True) as session:

        def answer(event: Event) -> None:
            if event.msg.type == "warning":
                warnings.append(event.msg.message)
            if event.msg.type == "elicitation_requested":
                bad = ElicitationResponse(request_id=event.msg.request_id, action="accept", content={"date": "2026-12-24", "seats": 50})
                with pytest.raises(OpRejected, match="seats"):
                    session.submit(bad)
                assert event.msg.request_id in session.snapshot().pending_elicitations
                good = {"date": "2026-12-24", "seats": 4, "confirm": True}
                session.submit(ElicitationResponse(request_id=event.msg.request_id, action="accept", content=good))

        session.subscribe(answer)
        result = await asyncio.wait_for(session.run("book"), 30)
    assert any("seats" in w for w in warnings)
    assert records(record) == [
        {**records(record)[0], "tool": "book", "restaurant": "Chez Py", "action": "accept",
         "content": {"date": "2026-12-24", "seats": 4, "confirm": True}}
    ]
    assert "booked Chez Py on 2026-12-24 for 4" in result.items[-2].output
    assert [i.action for i in result.items if i.type == "elicitation"] == ["accept"]


async def test_with_no_front_end_an_elicitation_is_declined_and_recorded(home: Path, script, tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    servers = {"ask": server_cfg("elicit_resolve.py", record)}
    model = script(call("mcp__ask__book", restaurant="X"), {"text": "no"})
    async with Session(model=model, policy="full-auto", mcp_servers=servers) as session:
        result = await asyncio.wait_for(session.run("book"), 30)
    assert [r["action"] for r in records(record)] == ["decline"]
    assert [(i.action, i.by) for i in result.items if i.type == "elicitation"] == [("decline", "policy")]


def test_nbagent_tools_lists_the_catalogue(home: Path, tmp_path: Path) -> None:
    Path("nbagent.toml").write_text(
        "[mcp_servers.feat]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(Path(__file__).parents[1] / 'servers' / 'features.py'))}]\n"
        "trusted = true\n[mcp_servers.feat.tools.delete_note]\napproval_mode = \"prompt\"\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "nbagent.cli", "tools", "--json"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    rows = {row["name"]: row for row in json.loads(proc.stdout)["tools"]}
    read = rows[FEATURES + "read_note"]
    assert (read["server"], read["raw_tool"], read["title"]) == ("feat", "read_note", "Read a note")
    assert read["annotations"]["read_only_hint"] is True
    assert rows[FEATURES + "delete_note"]["approval_mode"] == "prompt"


@pytest.mark.parametrize("protocol", ["legacy", "auto"])
async def test_every_call_carries_thread_turn_call_and_trace_meta(home: Path, script, tmp_path: Path, protocol) -> None:
    record = tmp_path / "record.jsonl"
    servers = {"feat": server_cfg("features.py", record, protocol=protocol, trusted=True)}
    model = script(call(FEATURES + "whoami"), call(FEATURES + "whoami"), {"text": "ok"})
    async with Session(model=model, mcp_servers=servers) as session:
        result = await asyncio.wait_for(session.run("who am I?"), 30)
    metas = [r["meta"] for r in records(record)]
    call_ids = [i.call_id for i in result.items if i.type == "function_call"]
    assert [m["nbagent/callId"] for m in metas] == call_ids
    for meta in metas:
        assert meta["nbagent/threadId"] == result.thread_id and meta["nbagent/turnId"] == result.turn_id
        assert re.fullmatch(r"00-[0-9a-f]{32}-[0-9a-f]{16}-01", meta["traceparent"])
        assert "progress_token" in meta or "progressToken" in meta
        assert not [k for k in meta if k.startswith(("io.modelcontextprotocol/nbagent", "dev.mcp/"))]
    trace_ids = {m["traceparent"].split("-")[1] for m in metas}
    spans = {m["traceparent"].split("-")[2] for m in metas}
    assert len(trace_ids) == 1 and len(spans) == 2  # one trace per turn, one span per call


async def test_an_unanswered_question_times_out_to_cancel(home: Path, script, tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    servers = {"ask": server_cfg("elicit_resolve.py", record)}
    model = script(call("mcp__ask__book", restaurant="Late"), {"text": "no answer"})
    async with Session(model=model, policy="full-auto", mcp_servers=servers, interactive=True) as session:
        session._config.elicitation_timeout_sec = 0.5
        result = await asyncio.wait_for(session.run("book"), 30)
    assert [r["action"] for r in records(record)] == ["cancel"]
    assert [(i.action, i.by) for i in result.items if i.type == "elicitation"] == [("cancel", "timeout")]


async def test_an_unanswered_approval_times_out_to_deny(home: Path, script, tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    servers = {"feat": server_cfg("features.py", record)}
    model = script(call(FEATURES + "delete_note", key="k"), {"text": "not deleted"})
    async with Session(model=model, mcp_servers=servers, interactive=True) as session:
        session._config.approval_timeout_sec = 0.5
        result = await asyncio.wait_for(session.run("delete"), 30)
    assert records(record) == []
    assert [(i.decision, i.by) for i in result.items if i.type == "approval"] == [("deny", "timeout")]
    assert result.text == "not deleted"


@pytest.mark.parametrize("protocol", ["legacy", "auto"])
async def test_a_tool_changed_after_approval_asks_again_and_says_what_changed(
    home: Path, script, tmp_path: Path, protocol
) -> None:
    record = tmp_path / "record.jsonl"
    servers = {"feat": server_cfg("features.py", record, protocol=protocol)}
    model = script(
        call(FEATURES + "archive", key="a"),
        call(FEATURES + "archive", key="b"),
        {"text": "first turn done"},
        call(FEATURES + "archive", key="c"),
        {"text": "second turn done"},
    )
    asked: list[EventMsg] = []
    async with Session(model=model, mcp_servers=servers, interactive=True) as session:

        def front_end(event: Event) -> None:
            if event.msg.type == "approval_requested":
                asked.append(event.msg)
                session.submit(ApprovalDecision(call_id=event.msg.call_id, decision="approve_session"))

        session.subscribe(front_end)
        await asyncio.wait_for(session.run("archive twice"), 30)
        assert len(asked) == 1  # the second call was remembered
        reword = next(s for s in session._tools() if s.raw_name == "reword")
        await session.perform(CallTool(name=reword.name, arguments={}, policy="full-auto"))  # an outside caller changes the tool
        await until(lambda: "delete every other" in next(s for s in session._tools() if s.raw_name == "archive").description,
                    "the catalogue to refresh on the server's notification", 10)
        await asyncio.wait_for(session.run("archive again"), 30)
    assert len(asked) == 2
    assert asked[0].changed is None
    assert "changed its description" in asked[1].changed
    assert "delete every other note" in asked[1].description
    assert [r.get("key") for r in records(record) if r["tool"] == "archive"] == ["a", "b", "c"]

