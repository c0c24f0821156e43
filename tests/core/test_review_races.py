"""Races at the edges of a turn: a parallel batch that one call aborts, a caller that stops
waiting for a turn that has not started yet."""

from __future__ import annotations

import asyncio
from pathlib import Path

from nbagent import Session
from nbagent.protocol import ApprovalDecision, FunctionCall, FunctionCallOutput
from nbagent.store import ThreadStore


async def test_abort_in_a_parallel_batch_stops_the_other_calls_and_gives_each_one_output(home: Path, script) -> None:
    finished: list[str] = []

    async def slow_read(name: str) -> str:
        """Read slowly."""
        await asyncio.sleep(0.3)
        finished.append(name)
        return "contents"

    def checked_read(name: str) -> str:
        """Read, after asking."""
        return "checked"

    model = script(
        {
            "tool_calls": [
                {"name": "slow_read", "arguments": {"name": "a"}},
                {"name": "checked_read", "arguments": {"name": "b"}},
            ]
        },
        {"text": "next turn"},
    )
    async with Session(model=model, interactive=True) as session:
        session.register_tool(slow_read, read_only=True)
        session.register_tool(checked_read, read_only=True, approval_mode="prompt")
        session.subscribe(
            lambda e: e.msg.type == "approval_requested"
            and session.submit(ApprovalDecision(call_id=e.msg.call_id, decision="abort"))
        )
        result = await asyncio.wait_for(session.run("read both"), 5)
        assert result.status == "aborted"
        await asyncio.sleep(0.5)  # longer than slow_read takes, had it kept running
        history = list(session.history)
        thread_id = session.thread_id
    assert finished == []
    outputs = [i.call_id for i in history if isinstance(i, FunctionCallOutput)]
    calls = [i.call_id for i in history if isinstance(i, FunctionCall)]
    assert sorted(outputs) == sorted(calls) and len(set(outputs)) == len(outputs) == 2
    with ThreadStore(home) as store:
        loaded = store.load(thread_id)
    stored = [i.call_id for i in loaded.items if isinstance(i, FunctionCallOutput)]
    assert sorted(stored) == sorted(calls)


async def test_cancelling_run_of_a_queued_turn_drops_that_turn(home: Path, script) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def block() -> str:
        """Wait for the test."""
        started.set()
        await release.wait()
        return "ok"

    model = script(
        {"tool_calls": [{"name": "block", "arguments": {}}]},
        {"text": "first done"},
        {"text": "second ran"},
    )
    async with Session(model=model, policy="full-auto") as session:
        session.register_tool(block)
        first = asyncio.ensure_future(session.run("first"))
        await asyncio.wait_for(started.wait(), 5)
        second = asyncio.ensure_future(session.run("second, then never mind"))
        await asyncio.sleep(0.05)
        second.cancel()
        await asyncio.gather(second, return_exceptions=True)
        release.set()
        result = await asyncio.wait_for(first, 5)
        assert result.ok and result.text == "first done"
        await asyncio.sleep(0.2)
        prompts = [i.text for i in session.history if type(i).__name__ == "UserMessage"]
    assert prompts == ["first"]


async def test_an_interrupted_call_gets_its_tool_call_end_before_the_turn_aborts(home: Path, script) -> None:
    started = asyncio.Event()

    async def hang() -> str:
        """Never finishes on its own."""
        started.set()
        await asyncio.sleep(30)
        return "late"

    model = script({"tool_calls": [{"name": "hang", "arguments": {}}, {"name": "hang", "arguments": {}}]})
    seen: list = []
    async with Session(model=model, policy="full-auto") as session:
        session.register_tool(hang)
        session.subscribe(seen.append)
        turn = asyncio.ensure_future(session.run("hang"))
        await asyncio.wait_for(started.wait(), 5)
        session.interrupt("stop pressed")
        result = await asyncio.wait_for(turn, 5)
    assert result.status == "aborted"
    kinds = [e.msg.type for e in seen]
    begins = [e for e in seen if e.msg.type == "tool_call_begin"]
    ends = [e for e in seen if e.msg.type == "tool_call_end"]
    assert len(begins) == 1  # the second call never started
    assert [(e.msg.call_id, e.msg.status, e.msg.is_error) for e in ends] == [(begins[0].msg.call_id, "aborted", True)]
    assert "stop pressed" in ends[0].msg.output
    assert kinds.index("tool_call_end") < kinds.index("turn_aborted")
