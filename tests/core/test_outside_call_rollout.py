"""An outside call's rollout (``Session.call_tool``): a start, any approval's record, an end, one
turn per call; a start is on disk before the call is asked about, and a process killed mid-call
loses nothing: the next session closes the open call's turn as aborted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from nbagent import Session
from nbagent.protocol import ApprovalDecision, CallTool, Event


def rollout(home: Path, thread_id: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (home / "threads" / f"{thread_id}.jsonl").read_text().splitlines()]


def shape(line: dict[str, Any]) -> tuple[Any, ...]:
    """A line without its ids and times: what must be the same from run to run."""
    if line["type"] == "turn":
        return ("turn", line["status"], line["entry"], line["policy"])
    if line["type"] == "item":
        item = line["item"]
        return ("item", item["type"], item.get("tool"), item.get("decision"), item.get("arguments"))
    return (line["type"],)


def started(policy: str = "on-request") -> tuple[Any, ...]:
    return ("turn", "started", "notebook_server", policy)


def completed(policy: str = "on-request") -> tuple[Any, ...]:
    return ("turn", "completed", "notebook_server", policy)


def approval(decision: str) -> tuple[Any, ...]:
    return ("item", "approval", "write", decision, {"text": "x"})


async def test_the_rollout_of_outside_calls_reads_line_for_line(home: Path, script) -> None:
    async with Session(model=script(), interactive=True) as session:
        session.register_tool(lambda: "ok", name="noop", read_only=True)
        session.register_tool(lambda text: text, name="write")
        answers = iter(["approve", "deny", "approve"])
        session.subscribe(
            lambda e: e.msg.type == "approval_requested"
            and session.submit(ApprovalDecision(call_id=e.msg.call_id, decision=next(answers)))
        )
        outputs = [
            await session.perform(CallTool(name=name, arguments={"text": "x"} if name == "write" else {}))
            for name in ["noop", "write", "noop", "write", "write"]
        ]
        thread_id = session._thread.id
    assert [o.status for o in outputs] == ["completed", "completed", "completed", "denied", "completed"]
    lines = rollout(home, thread_id)
    assert [shape(line) for line in lines] == [
        ("thread_meta",),
        started(), completed(),
        started(), approval("approve"), completed(),
        started(), completed(),
        started(), approval("deny"), completed(),
        started(), approval("approve"), completed(),
    ]
    turn_ids = [line.get("turn_id") or line["item"]["turn_id"] for line in lines[1:]]
    assert turn_ids[:2] == [turn_ids[0]] * 2 and turn_ids[2:5] == [turn_ids[2]] * 3  # a call's lines are its turn's
    assert len(set(turn_ids)) == 5


async def test_an_approval_decided_during_a_call_is_written_after_its_start(home: Path, script) -> None:
    on_disk_when_asked: list[list[dict[str, Any]]] = []

    async with Session(model=script(), interactive=True) as session:
        session.register_tool(lambda text: text, name="write")

        def answer(e: Event) -> None:
            if e.msg.type == "approval_requested":
                on_disk_when_asked.append(rollout(home, session._thread.id))
                session.submit(ApprovalDecision(call_id=e.msg.call_id, decision="approve"))

        session.subscribe(answer)
        output = await session.perform(CallTool(name="write", arguments={"text": "x"}))
        thread_id = session._thread.id
    assert output.output == "x"
    assert [shape(line) for line in on_disk_when_asked[0]] == [("thread_meta",), started()]
    assert [shape(line) for line in rollout(home, thread_id)] == [
        ("thread_meta",), started(), approval("approve"), completed()
    ]


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    from nbagent import Session
    from nbagent.protocol import CallTool

    async def main():
        async with Session(model="replay:none", interactive=True, thread_name="outside") as session:
            session.register_tool(lambda: "ok", name="noop", read_only=True)
            session.register_tool(lambda text: text, name="write")
            session.subscribe(lambda e: e.msg.type == "approval_requested" and print("ASKED", session.snapshot().thread_id, flush=True))
            for _ in range(3):
                await session.perform(CallTool(name="noop", arguments={}))
            await session.perform(CallTool(name="write", arguments={"text": "x"}))  # waits for a person: killed here

    asyncio.run(main())
    """
)


async def test_a_kill_while_an_outside_call_waits_leaves_its_turn_for_resume_to_close(home: Path) -> None:
    env = {**os.environ, "NBAGENT_HOME": str(home)}
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = child.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("ASKED"), f"the child did not reach the approval: {line!r}"
        thread_id = line.split()[1]
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert [shape(line) for line in rollout(home, thread_id)] == [("thread_meta",), *[started(), completed()] * 3, started()]
    async with Session(model="replay:none", thread="outside") as session:
        assert session._thread.id == thread_id
        session.register_tool(lambda: "ok", name="noop", read_only=True)
        after = await session.perform(CallTool(name="noop", arguments={}))
    assert after.status == "completed"
    lines = rollout(home, thread_id)
    closed = lines.pop(8)
    assert (closed["type"], closed["status"], closed["turn_id"]) == ("turn", "aborted", lines[7]["turn_id"])
    assert closed["reason"] == "the process ended during this turn"
    assert [shape(line) for line in lines] == [("thread_meta",), *[started(), completed()] * 3, started(), started(), completed()]
