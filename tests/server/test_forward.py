"""What an MCP caller of nbagent is told while a turn runs: the events of a real turn (a replay
model, a real MCP server, an approval and a denial) as progress messages and log lines."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from nbagent import Session
from nbagent.protocol import ApprovalDecision, Event
from nbagent.server.forward import Forwarder
from tests.core.conftest import home, script
from tests.mcp.conftest import server_cfg

__all__ = ["home", "script"]


async def test_a_turn_reaches_the_caller_as_progress_and_log_lines(home: Path, script) -> None:
    model = script(
        {"text": "Reading.", "tool_calls": [{"name": "mcp__feat__read_note", "arguments": {"key": "r"}},
                                            {"name": "mcp__feat__delete_note", "arguments": {"key": "d"}}]},
        {"tool_calls": [{"name": "mcp__feat__work", "arguments": {"steps": 2}}]},
        {"text": "Done."},
    )
    progress: list[str | None] = []
    logs: list[tuple[str, dict[str, Any]]] = []

    async def on_progress(_step: float, _total: float | None, message: str | None) -> None:
        progress.append(message)

    async def on_log(level: str, data: Any) -> None:
        logs.append((level, data))

    forward = Forwarder(on_progress, on_log)
    events: list[Event] = []
    async with Session(model=model, policy="untrusted", mcp_servers={"feat": server_cfg("features.py")},
                       interactive=True) as session:

        def answer(event: Event) -> None:
            events.append(event)
            if event.msg.type == "approval_requested":
                decision = "deny" if event.msg.raw_tool == "delete_note" else "approve"
                session.submit(ApprovalDecision(call_id=event.msg.call_id, decision=decision))

        session.subscribe(answer)
        await asyncio.wait_for(session.run("go"), 30)
    for event in events:
        await forward(event)
    await forward.flush()

    read, delete, work = (e.msg.call_id for e in events if e.msg.type == "tool_call_begin")
    shown = [m for m in progress if m is not None and not m.startswith("MCP server")]
    assert shown == [
        "turn started", "Reading.",
        "calling mcp__feat__read_note (feat/read_note)", "approval needed for mcp__feat__read_note",
        "approval approve (user)", "mcp__feat__read_note: completed",
        "calling mcp__feat__delete_note (feat/delete_note)", "approval needed for mcp__feat__delete_note",
        "approval deny (user)", "mcp__feat__delete_note: denied",
        "calling mcp__feat__work (feat/work)", "approval needed for mcp__feat__work", "approval approve (user)",
        f"{work}: 1/2 step 1", f"{work}: 2/2 step 2", "mcp__feat__work: completed", "Done.", "turn completed",
    ]
    told = [(level, data["event"], data.get("call_id")) for level, data in logs if data["event"] != "mcp_startup_update"]
    assert told[:3] == [("info", "turn_started", None), ("info", "tool_call_begin", read), ("notice", "approval_requested", read)]
    assert ("notice", "approval_requested", delete) in told and ("warning", "tool_call_end", delete) in told
    assert told[-1] == ("info", "turn_completed", None) and forward.sent_progress == len(progress)
