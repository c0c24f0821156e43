"""Events are envelopes around frozen payloads, and every turn ends with exactly one of
``turn_completed`` / ``turn_aborted`` / ``turn_failed``, the last event of that turn: checked over
real turns (replay model, real openai client against the fake server, real MCP servers)."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest
from pydantic import ValidationError

from nbagent import Session
from nbagent.core.session import RunResult
from nbagent.protocol import (
    TERMINAL_TYPES,
    ApprovalRequested,
    Event,
    Interrupt,
    TurnFailed,
    UserTurn,
    WarningEvent,
)
from nbagent.secrets import DELTA_TYPES
from tests.core.test_openai_session import config_for
from tests.mcp.conftest import server_cfg

STATUS_OF = {"turn_completed": "completed", "turn_aborted": "aborted", "turn_failed": "failed"}


def assert_one_ending_each(events: list[Event], results: list[RunResult]) -> list[str]:
    """The rule itself; returns the ending type of each result's turn, in order."""
    endings: dict[str, list[Event]] = {}
    last: dict[str, int] = {}
    for index, event in enumerate(events):
        if event.turn_id is None:
            continue
        last[event.turn_id] = index
        if event.msg.type in TERMINAL_TYPES:
            endings.setdefault(event.turn_id, []).append(event)
    started = {e.turn_id for e in events if e.msg.type == "turn_started"}
    assert started <= endings.keys(), "a turn started and never ended"
    kinds = []
    for result in results:
        [ending] = endings[result.turn_id]  # exactly one
        assert events[last[result.turn_id]] is ending, "an event of the turn came after its end"
        assert STATUS_OF[ending.msg.type] == result.status
        kinds.append(ending.msg.type)
    assert all(len(ends) == 1 for ends in endings.values())
    # In order; a delta whose text may begin a secret is held (a gap) and comes, as its tail,
    # on the envelope of the event that ends its item.
    seqs = [e.seq for e in events]
    assert seqs == sorted(seqs)
    assert all(e.msg.type in DELTA_TYPES for e, after in itertools.pairwise(events) if e.seq == after.seq)
    return kinds


async def run_turns(session: Session, *prompts: str) -> tuple[list[Event], list[RunResult]]:
    seen: list[Event] = []
    session.subscribe(seen.append)
    results = [await asyncio.wait_for(session.run(p), 60) for p in prompts]
    return seen, results


async def test_completed_turns_and_a_model_that_runs_out(home: Path, script) -> None:
    model = script({"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}, {"text": "3"})
    async with Session(model=model, policy="full-auto") as session:
        session.register_tool(lambda a, b: a + b, name="add")
        events, results = await run_turns(session, "add", "and again")
    assert assert_one_ending_each(events, results) == ["turn_completed", "turn_failed"]
    [failed] = [e.msg for e in events if isinstance(e.msg, TurnFailed)]
    assert failed.code == "replay_exhausted" and results[1].error == failed.message
    assert not [e for e in events if e.msg.type == "error"]  # the end is turn_failed, not a second error


async def test_a_crashing_python_tool_and_a_bad_model_name(home: Path, script) -> None:
    def explode() -> str:
        raise RuntimeError("the tool blew up")

    model = script({"tool_calls": [{"name": "explode", "arguments": {}}]}, {"text": "it failed, sorry"})
    async with Session(model=model, policy="full-auto") as session:
        session.register_tool(explode)
        seen: list[Event] = []
        session.subscribe(seen.append)
        crashed = await session.run("explode")
        unknown = await session.run("hi", model="replay:/no/such/script.json")
    assert assert_one_ending_each(seen, [crashed, unknown]) == ["turn_completed", "turn_failed"]
    assert crashed.text == "it failed, sorry" and unknown.error_code == "bad_request"  # no such script


async def test_interrupted_turns_running_or_queued(home: Path, script) -> None:
    model = script({"tool_calls": [{"name": "wait", "arguments": {}}]}, {"text": "never"}, {"text": "after"})
    never = asyncio.Event()

    async def wait() -> str:
        await never.wait()
        return "woke"

    async with Session(model=model, policy="full-auto") as session:
        session.register_tool(wait)
        seen: list[Event] = []
        running, queued = UserTurn(prompt="wait"), UserTurn(prompt="queued")

        def stop_both(event: Event) -> None:
            if event.msg.type == "tool_call_begin":
                session.submit(Interrupt(reason="not this one", turn_id=queued.turn_id))
                session.submit(Interrupt(reason="stop pressed"))

        session.subscribe(seen.append)
        session.subscribe(stop_both)
        first, second = session._start(running), session._start(queued)
        results = list(await asyncio.wait_for(asyncio.gather(first, second), 30))
        results.append(await session.run("go on"))
    assert assert_one_ending_each(seen, results) == ["turn_aborted", "turn_aborted", "turn_completed"]
    assert [e.msg.reason for e in seen if e.msg.type == "turn_aborted"] == ["not this one", "stop pressed"]


async def test_an_approval_interrupted_is_aborted(home: Path, script) -> None:
    model = script({"tool_calls": [{"name": "write", "arguments": {"text": "x"}}]})
    async with Session(model=model, interactive=True) as session:
        session.register_tool(lambda text: None, name="write")
        session.subscribe(lambda e: isinstance(e.msg, ApprovalRequested) and session.submit(Interrupt()))
        events, results = await run_turns(session, "write")
    assert assert_one_ending_each(events, results) == ["turn_aborted"]


async def test_a_crashing_and_a_broken_mcp_server(home: Path, script, tmp_path: Path) -> None:
    servers = {
        "crash": server_cfg("crashy.py", tmp_path / "record.jsonl"),
        "broken": server_cfg("no_such_server.py", startup_timeout_sec=10),
    }
    model = script(
        {"tool_calls": [{"name": "mcp__crash__boom", "arguments": {}}]},
        {"text": "boom noted"},
        {"tool_calls": [{"name": "mcp__crash__die", "arguments": {"code": 3}}]},
        {"text": "the server died"},
    )
    async with Session(model=model, policy="full-auto", mcp_servers=servers) as session:
        events, results = await run_turns(session, "boom", "die")
    assert assert_one_ending_each(events, results) == ["turn_completed", "turn_completed"]
    statuses = {(e.msg.server, e.msg.status) for e in events if e.msg.type == "mcp_startup_update"}
    assert ("broken", "failed") in statuses
    assert [e.msg.status for e in events if e.msg.type == "tool_call_end"] == ["failed", "failed"]


@pytest.mark.parametrize("wire_api", ["responses", "chat"])
async def test_errors_from_a_real_model_server(openai_server, home: Path, wire_api: str) -> None:
    openai_server.script([{"status": 401}, {"status": 400, "code": "context_length_exceeded"}, {"text": "fine"}])
    async with Session(config=config_for(openai_server, wire_api, home)) as session:
        events, results = await run_turns(session, "one", "two", "three")
    assert assert_one_ending_each(events, results) == ["turn_failed", "turn_failed", "turn_completed"]
    codes = [e.msg.code for e in events if isinstance(e.msg, TurnFailed)]
    assert codes == ["auth", "context_length"]


async def test_the_bus_never_changes_a_payload(home: Path, script) -> None:
    async with Session(model=script({"text": "hello"})) as session:
        events, _ = await run_turns(session, "hi")
    for event in events:
        before = event.msg.model_dump()
        with pytest.raises(ValidationError):
            event.msg.type = "other"  # type: ignore[misc]
        with pytest.raises(ValidationError):
            event.turn_id = "someone else's"  # type: ignore[misc]
        assert event.msg.model_dump() == before
    # On the wire an event is one flat object, as it was before envelopes: old readers still read it.
    wire = [e.model_dump(mode="json") for e in events]
    assert all({"seq", "thread_id", "turn_id", "at", "type"} <= w.keys() and "msg" not in w for w in wire)
    assert [Event.model_validate(w) for w in wire] == events


def test_the_bus_envelope_is_the_one_validation_makes_and_anything_else_is_validated() -> None:
    msg = WarningEvent(message="w")
    made = Event.wrap(msg, seq=2, thread_id="t", turn_id="u")
    assert made == Event(seq=2, thread_id="t", turn_id="u", at=made.at, msg=msg)
    assert made.model_fields_set == {"seq", "thread_id", "turn_id", "at", "msg"}
    assert made.model_copy(update={"seq": 3}).seq == 3 and made.seq == 2
    assert Event.wrap({"type": "warning", "message": "w"}).msg == msg  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Event.wrap(UserTurn(prompt="an op, not an event"))  # type: ignore[arg-type]
