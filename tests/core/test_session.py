"""The session and turn loop through the public API, on the scripted model and Python tools."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.core.handlers import OpRejected
from nbagent.protocol import (
    ApprovalDecision,
    ApprovalRecord,
    CallTool,
    Event,
    EventMsg,
    FunctionCall,
    FunctionCallOutput,
    Interrupt,
    UserMessage,
    UserTurn,
)
from tests.waiting import until


def outputs_by_call(items: list) -> dict[str, FunctionCallOutput]:
    return {i.call_id: i for i in items if isinstance(i, FunctionCallOutput)}


def assert_thread_valid(items: list) -> None:
    """Every function_call has exactly one output: what a model API requires of a history."""
    calls = [i.call_id for i in items if isinstance(i, FunctionCall)]
    outs = [i.call_id for i in items if isinstance(i, FunctionCallOutput)]
    assert sorted(calls) == sorted(outs)


async def test_a_text_turn_returns_the_text_and_events_carry_ids_in_order(home: Path, script) -> None:
    model = script({"text": "Hello from the script."})
    seen: list[Event] = []
    async with Session(model=model) as session:
        session.subscribe(seen.append)
        result = await session.run("say hello")
    assert result.ok and result.text == "Hello from the script."
    assert [type(i).__name__ for i in result.items] == ["UserMessage", "AssistantMessage"]
    kinds = [e.msg.type for e in seen]
    assert "turn_started" in kinds and kinds[-2:] == ["turn_completed", "shutdown_complete"]
    seen = seen[kinds.index("turn_started") :]
    assert "".join(e.msg.delta for e in seen if e.msg.type == "agent_message_delta") == "Hello from the script."
    seqs = [e.seq for e in seen]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    turn_events = [e for e in seen if e.msg.type != "shutdown_complete"]
    assert {e.thread_id for e in seen} == {result.thread_id}
    assert {e.turn_id for e in turn_events} == {result.turn_id}
    for event in seen:
        assert Event.model_validate_json(event.model_dump_json()) == event


async def test_a_three_step_tool_loop_backfills_outputs_until_the_model_answers(home: Path, script) -> None:
    calls: list[int] = []

    def add(a: int, b: int) -> int:
        """Add two integers."""
        calls.append(a + b)
        return a + b

    model = script(
        {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]},
        {"tool_calls": [{"name": "add", "arguments": {"a": 3, "b": 4}}]},
        {"tool_calls": [{"name": "add", "arguments": {"a": 5, "b": 6}}]},
        {"text": "done"},
    )
    async with Session(model=model, policy="full-auto") as session:
        session.register_tool(add)
        result = await session.run("add things")
    assert calls == [3, 7, 11]
    assert result.text == "done"
    outputs = [i.output for i in result.items if isinstance(i, FunctionCallOutput)]
    assert outputs == ["3", "7", "11"]
    assert_thread_valid(result.items)


async def test_read_only_calls_run_in_parallel(home: Path, script) -> None:
    """Each tool waits for the other to start: sequential execution would time out."""
    started = {"a": asyncio.Event(), "b": asyncio.Event()}

    async def meet(me: str, other: str) -> str:
        started[me].set()
        await asyncio.wait_for(started[other].wait(), 5)
        return me

    model = script(
        {
            "tool_calls": [
                {"name": "meet", "arguments": {"me": "a", "other": "b"}},
                {"name": "meet", "arguments": {"me": "b", "other": "a"}},
            ]
        },
        {"text": "met"},
    )
    async with Session(model=model) as session:
        session.register_tool(meet, read_only=True)
        result = await asyncio.wait_for(session.run("meet"), 10)
    assert result.ok
    assert sorted(o.output for o in outputs_by_call(result.items).values()) == ["a", "b"]


async def test_malformed_arguments_and_unknown_tools_become_outputs_the_model_reads(home: Path, script) -> None:
    model = script(
        {"tool_calls": [{"name": "echo", "arguments": "{not json"}, {"name": "nope", "arguments": {}}]},
        {"text": "recovered"},
    )
    async with Session(model=model, policy="full-auto") as session:
        session.register_tool(lambda text: text, name="echo")
        result = await session.run("go")
    outs = list(outputs_by_call(result.items).values())
    assert result.text == "recovered"
    assert all(o.is_error for o in outs)
    assert "not valid JSON" in outs[0].output
    assert "unknown tool 'nope'" in outs[1].output and "echo" in outs[1].output


async def test_a_crashing_tool_is_a_failed_result_not_a_dead_session(home: Path, script) -> None:
    def boom() -> None:
        raise RuntimeError("kaput")

    model = script({"tool_calls": [{"name": "boom", "arguments": {}}]}, {"text": "ok"}, {"text": "again"})
    async with Session(model=model, policy="full-auto") as session:
        session.register_tool(boom)
        first = await session.run("go")
        second = await session.run("go on")
    out = next(iter(outputs_by_call(first.items).values()))
    assert out.is_error and "RuntimeError: kaput" in out.output
    assert first.ok and second.text == "again"


async def test_without_a_front_end_a_call_needing_approval_is_declined_and_recorded(home: Path, script) -> None:
    ran: list[str] = []
    model = script({"tool_calls": [{"name": "write", "arguments": {"text": "x"}}]}, {"text": "ok"})
    async with Session(model=model, policy="on-request") as session:
        session.register_tool(lambda text: ran.append(text), name="write")
        result = await session.run("write")
    assert ran == []
    record = next(i for i in result.items if isinstance(i, ApprovalRecord))
    assert (record.decision, record.by) == ("deny", "policy")
    out = next(iter(outputs_by_call(result.items).values()))
    assert out.status == "denied" and "declined" in out.output


async def _answer_approvals(session: Session, events: AsyncIterator[Event], **fields) -> None:
    async for event in events:
        if event.msg.type == "approval_requested":
            session.submit(ApprovalDecision(call_id=event.msg.call_id, **fields))
            return


@pytest.mark.parametrize(
    ("decision", "message", "ran"),
    [("approve", None, ["x"]), ("approve_session", None, ["x"]), ("deny", "not today", [])],
)
async def test_a_front_end_decision_is_what_happens(home: Path, script, decision, message, ran) -> None:
    done: list[str] = []
    model = script({"tool_calls": [{"name": "write", "arguments": {"text": "x"}}]}, {"text": "ok"})
    async with Session(model=model, interactive=True) as session:
        session.register_tool(lambda text: done.append(text), name="write")
        answer = asyncio.ensure_future(_answer_approvals(session, session.events(), decision=decision, message=message))
        result = await asyncio.wait_for(session.run("write"), 10)
        await answer
    assert done == ran
    record = next(i for i in result.items if isinstance(i, ApprovalRecord))
    assert (record.decision, record.by, record.message) == (decision, "user", message)
    out = next(iter(outputs_by_call(result.items).values()))
    if decision == "deny":
        assert out.status == "denied" and "not today" in out.output


async def test_edited_arguments_are_what_runs_and_what_is_recorded(home: Path, script) -> None:
    done: list[str] = []
    model = script({"tool_calls": [{"name": "write", "arguments": {"text": "model's"}}]}, {"text": "ok"})

    def write(text: str) -> None:
        done.append(text)

    async with Session(model=model, interactive=True) as session:
        session.register_tool(write)

        async def answer(events: AsyncIterator[Event]) -> None:
            async for event in events:
                if event.msg.type == "approval_requested":
                    bad = ApprovalDecision(call_id=event.msg.call_id, decision="approve", arguments={"text": 5})
                    with pytest.raises(OpRejected, match="rejected"):  # refused: schema says string
                        session.submit(bad)
                    session.submit(ApprovalDecision(call_id=event.msg.call_id, decision="approve", arguments={"text": "mine"}))
                    return

        task = asyncio.ensure_future(answer(session.events()))  # subscribed now, before the turn
        result = await asyncio.wait_for(session.run("write"), 10)
        await task
    assert done == ["mine"]
    assert next(i for i in result.items if isinstance(i, ApprovalRecord)).arguments == {"text": "mine"}


async def test_arguments_edited_down_to_none_are_what_runs_not_the_models(home: Path, script) -> None:
    """Removing every argument is an edit: ``{}`` runs (the tool's default applies) and is recorded."""
    done: list[str] = []
    model = script({"tool_calls": [{"name": "write", "arguments": {"text": "rm -rf model's"}}]}, {"text": "ok"})

    def write(text: str = "default") -> None:
        done.append(text)

    async with Session(model=model, interactive=True) as session:
        session.register_tool(write)
        task = asyncio.ensure_future(_answer_approvals(session, session.events(), decision="approve", arguments={}))
        result = await asyncio.wait_for(session.run("write"), 10)
        await task
    assert done == ["default"]
    assert next(i for i in result.items if isinstance(i, ApprovalRecord)).arguments == {}


async def test_approve_for_session_is_remembered_for_the_next_call(home: Path, script) -> None:
    done: list[str] = []
    call = {"tool_calls": [{"name": "write", "arguments": {"text": "x"}}]}
    model = script(call, {"text": "one"}, call, {"text": "two"})
    asked: list[str] = []
    async with Session(model=model, interactive=True) as session:
        session.register_tool(lambda text: done.append(text), name="write")

        def on_event(event: Event) -> None:
            if event.msg.type == "approval_requested":
                asked.append(event.msg.call_id)
                session.submit(ApprovalDecision(call_id=event.msg.call_id, decision="approve_session"))

        session.subscribe(on_event)
        await asyncio.wait_for(session.run("first"), 10)
        second = await asyncio.wait_for(session.run("second"), 10)
    assert len(asked) == 1 and done == ["x", "x"]
    assert next(i for i in second.items if isinstance(i, ApprovalRecord)).by == "remembered"


async def test_abort_at_an_approval_aborts_the_turn_and_keeps_the_thread_valid(home: Path, script) -> None:
    model = script({"tool_calls": [{"name": "write", "arguments": {"text": "x"}}]}, {"text": "next turn"})
    async with Session(model=model, interactive=True) as session:
        session.register_tool(lambda text: None, name="write")
        session.subscribe(
            lambda e: e.msg.type == "approval_requested" and session.submit(ApprovalDecision(call_id=e.msg.call_id, decision="abort"))
        )
        result = await asyncio.wait_for(session.run("write"), 10)
        assert result.status == "aborted"
        assert_thread_valid(session._thread.items)
        after = await asyncio.wait_for(session.run("go on"), 10)
    assert after.text == "next turn"


async def test_interrupt_while_waiting_for_approval_denies_it_and_the_thread_stays_valid(home: Path, script) -> None:
    ran: list[str] = []
    model = script({"tool_calls": [{"name": "write", "arguments": {"text": "x"}}]}, {"text": "fresh"})
    async with Session(model=model, interactive=True) as session:
        session.register_tool(lambda text: ran.append(text), name="write")
        session.subscribe(lambda e: e.msg.type == "approval_requested" and session.submit(Interrupt()))
        result = await asyncio.wait_for(session.run("write"), 10)
        assert result.status == "aborted"
        record = next(i for i in session._thread.items if isinstance(i, ApprovalRecord))
        assert (record.decision, record.by) == ("deny", "interrupt")
        assert_thread_valid(session._thread.items)
        after = await asyncio.wait_for(session.run("again"), 10)
    assert ran == [] and after.text == "fresh"


async def test_several_consumers_each_get_every_event(home: Path, script) -> None:
    model = script({"text": "a b c"})
    async with Session(model=model) as session:
        streams = [session.events(), session.events()]

        async def collect(stream) -> list[int]:
            seqs = []
            async for event in stream:
                seqs.append(event.seq)
                if event.msg.type == "turn_completed":
                    return seqs
            return seqs

        tasks = [asyncio.ensure_future(collect(s)) for s in streams]
        await session.run("go")
        first, second = await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert first == second and len(first) >= 5


async def test_a_thread_resumes_in_a_new_session_with_the_same_history(home: Path, script) -> None:
    model = script({"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 1}}]}, {"text": "two"}, {"text": "three"})
    async with Session(model=model, policy="full-auto", thread_name="sums") as session:
        session.register_tool(lambda a, b: a + b, name="add")
        first = await session.run("add")
        before = list(session._thread.items)
    async with Session(model=script({"text": "resumed"}), thread="sums") as again:
        assert again._thread.id == first.thread_id
        assert again._thread.items == before
        result = await again.run("more")
    assert result.text == "resumed"
    assert isinstance(result.items[0], UserMessage)


async def test_a_script_that_runs_out_fails_the_turn_and_the_session_survives(home: Path, script) -> None:
    model = script({"text": "only one"})
    errors: list[EventMsg] = []
    async with Session(model=model) as session:
        session.subscribe(lambda e: e.msg.type == "turn_failed" and errors.append(e.msg))
        assert (await session.run("one")).ok
        second = await session.run("two")
        assert second.status == "failed" and second.error_code == "replay_exhausted"
        assert session._thread.items[-1].type == "user_message"
    assert errors and "script" in errors[0].message


async def test_no_model_configured_says_what_to_set(home: Path) -> None:
    async with Session() as session:
        result = await session.run("hello")
    assert result.status == "failed" and result.error_code == "config"
    assert "OPENAI_API_KEY" in result.error and "replay:" in result.error and "base_url" in result.error


def test_run_sync_works_outside_an_event_loop(home: Path, script) -> None:
    result = Session.run_sync("hi", model=script({"text": "sync"}))
    assert result.text == "sync"


async def test_rollout_holds_every_item_in_order(home: Path, script) -> None:
    model = script({"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 2}}]}, {"text": "4"})
    async with Session(model=model, policy="full-auto") as session:
        session.register_tool(lambda a, b: a + b, name="add")
        await session.run("add")
        history = list(session._thread.items)
        thread_id = session._thread.id
    lines = [json.loads(line) for line in (home / "threads" / f"{thread_id}.jsonl").read_text().splitlines()]
    stored = [line["item"]["id"] for line in lines if line["type"] == "item"]
    assert stored == [item.id for item in history]
    assert [line["status"] for line in lines if line["type"] == "turn"] == ["started", "completed"]


async def test_an_outside_caller_goes_through_the_same_approvals_and_events(home: Path, script) -> None:
    ran: list[str] = []
    seen: list[Event] = []

    def write(text: str) -> str:
        ran.append(text)
        return "written"

    async with Session(model=script(), interactive=True) as session:
        session.register_tool(write)
        session.subscribe(seen.append)
        session.subscribe(
            lambda e: e.msg.type == "approval_requested"
            and session.submit(ApprovalDecision(call_id=e.msg.call_id, decision="deny", message="no"))
        )
        denied = await session.perform(CallTool(name="write", arguments={"text": "a"}))
        allowed = await session.perform(CallTool(name="write", arguments={"text": "b"}, policy="full-auto"))
        model_history = [i for i in session._thread.items if i.type in ("function_call", "function_call_output")]
    assert ran == ["b"] and denied.status == "denied" and allowed.output == "written"
    kinds = [e.msg.type for e in seen]
    assert kinds.count("tool_call_begin") == 2 and kinds.count("approval_requested") == 1
    assert {e.msg.entry for e in seen if e.msg.type == "tool_call_begin"} == {"notebook_server"}
    assert model_history == []
    rollout = (home / "threads" / f"{session._thread.id}.jsonl").read_text()
    turns = [json.loads(line) for line in rollout.splitlines() if '"type":"turn"' in line]
    assert [(t["status"], t["entry"]) for t in turns] == [("started", "notebook_server"), ("completed", "notebook_server")] * 2


async def test_the_duration_of_a_call_excludes_the_wait_for_approval(home: Path, script) -> None:
    model = script({"tool_calls": [{"name": "write", "arguments": {"text": "x"}}]}, {"text": "ok"})
    async with Session(model=model, interactive=True) as session:
        session.register_tool(lambda text: None, name="write")

        deciding: list[float] = []

        async def answer_late(events: AsyncIterator[Event]) -> None:
            async for event in events:
                if event.msg.type == "approval_requested":
                    call_id, asked = event.msg.call_id, time.monotonic()
                    await until(lambda asked=asked: time.monotonic() - asked >= 1.5, "1.5 s of a human deciding")
                    deciding.append(time.monotonic() - asked)
                    session.submit(ApprovalDecision(call_id=call_id, decision="approve"))
                    return

        task = asyncio.ensure_future(answer_late(session.events()))
        result = await asyncio.wait_for(session.run("write"), 10)
        await task
    (output,) = outputs_by_call(result.items).values()
    assert output.duration_ms < 1000 <= 1000 * deciding[0] - 500  # a no-op tool; the deciding is not in it


async def test_a_queued_turn_can_be_stopped_before_it_starts(home: Path, script) -> None:
    gate = asyncio.Event()

    async def wait_for_gate() -> str:
        await gate.wait()
        return "opened"

    model = script({"tool_calls": [{"name": "wait_for_gate", "arguments": {}}]}, {"text": "first"}, {"text": "third"})
    async with Session(model=model, policy="full-auto") as session:
        session.register_tool(wait_for_gate)
        ops = [UserTurn(prompt=p) for p in ("one", "two", "three")]
        first, second, third = (session._start(op) for op in ops)
        session.submit(Interrupt(reason="not this one", turn_id=ops[1].turn_id))
        assert session._interrupt("already gone", turn_id=ops[1].turn_id) is False
        gate.set()
        results = await asyncio.wait_for(asyncio.gather(first, second, third), 10)
        prompts = [i.text for i in session._thread.items if isinstance(i, UserMessage)]
    assert [r.status for r in results] == ["completed", "aborted", "completed"]
    assert [r.text for r in results] == ["first", "", "third"]
    assert prompts == ["one", "three"]


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
        {"text": "third ran"},
    )
    async with Session(model=model, policy="full-auto") as session:
        session.register_tool(block)
        aborted: list[str] = []
        session.subscribe(lambda e: e.msg.type == "turn_aborted" and aborted.append(e.msg.reason))
        first = asyncio.ensure_future(session.run("first"))
        await asyncio.wait_for(started.wait(), 5)
        second = asyncio.ensure_future(session.run("second, then never mind"))
        await until(lambda: session.snapshot().queued, "the second turn queued behind the first")
        second.cancel()
        await asyncio.gather(second, return_exceptions=True)
        assert aborted == ["the caller stopped waiting"]  # it was queued, and dropped from the queue
        release.set()
        result = await asyncio.wait_for(first, 5)
        assert result.ok and result.text == "first done"
        # Turns run in order: had the second stayed queued, it would run before this one.
        third = await asyncio.wait_for(session.run("third"), 5)
        assert third.text == "third ran"
        prompts = [i.text for i in session._thread.items if type(i).__name__ == "UserMessage"]
    assert prompts == ["first", "third"]


async def test_secret_header_values_never_reach_the_rollout(home: Path, script) -> None:
    from nbagent.config import Config, ModelProviderConfig

    secret = "hdr-secret-value-0123456789"
    model = script({"tool_calls": [{"name": "leak", "arguments": {}}]}, {"text": f"the header was {secret}"})
    config = Config(
        model=model,
        home=str(home),
        approval_policy="full-auto",
        model_providers={"local": ModelProviderConfig(base_url="http://127.0.0.1:9/v1", http_headers={"api-key": secret})},
    )
    async with Session(config=config) as session:
        session.register_tool(lambda: f"echoed {secret}", name="leak")
        result = await session.run("leak it")
    assert secret in result.text  # the live session sees it; the disk never does
    assert secret not in (home / "threads" / f"{result.thread_id}.jsonl").read_text()
