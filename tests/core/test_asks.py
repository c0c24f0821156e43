"""Asks, through a real session and real MCP servers: an approval or a server's question ends in
exactly one recorded resolution (user, policy, timeout, interrupt), each kind the same way."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.config import ToolConfig
from nbagent.core.handlers import OpRejected
from nbagent.protocol import ApprovalDecision, AskUnanswered, ElicitationResponse, EventMsg, Op
from tests.mcp.conftest import records, server_cfg

DELETE = "mcp__feat__delete_note"
READ = "mcp__feat__read_note"
BOOK = "mcp__ask__book"
ANSWER = {"date": "2026-12-24", "seats": 2, "confirm": True}


def call(tool: str, **arguments) -> dict:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


def answer_for(event: EventMsg, choice: str) -> Op:
    """A front end's answer to either kind of ask: ``yes`` or ``no``."""
    if event.type == "approval_requested":
        if choice == "yes":
            return ApprovalDecision(call_id=event.call_id, decision="approve")
        return ApprovalDecision(call_id=event.call_id, decision="deny", message="not now")
    if choice == "yes":
        return ElicitationResponse(request_id=event.request_id, action="accept", content=ANSWER)
    return ElicitationResponse(request_id=event.request_id, action="decline")


KINDS = {
    # kind: (server script, the model's call, the requested event, the record's answer field)
    "approval": ("features.py", call(DELETE, key="k"), "approval_requested", "decision"),
    "elicitation": ("elicit_resolve.py", call(BOOK, restaurant="Chez Py"), "elicitation_requested", "action"),
}


def setup(kind: str, script, tmp_path: Path) -> tuple[dict, str, str, str, Path]:
    server, first, requested, field = KINDS[kind]
    record = tmp_path / "record.jsonl"
    name = "feat" if kind == "approval" else "ask"
    # An approval is asked under on-request (delete is destructive); a question under full-auto.
    return {name: server_cfg(server, record)}, script(first, {"text": "done"}), requested, field, record


def resolutions(items, kind: str, field: str) -> list[tuple[str, str, str | None]]:
    return [(getattr(i, field), i.by, i.message) for i in items if i.type == kind]


def policy_for(kind: str) -> str:
    return "on-request" if kind == "approval" else "full-auto"


def executed(kind: str, record: Path) -> list[str]:
    """What reached the server: the deleted key, or the answer the booking got."""
    return [r.get("key") or r.get("action") for r in records(record)]


async def run_with(session: Session, front_end: Callable[[EventMsg], None], prompt: str = "go"):
    session.subscribe(lambda event: front_end(event.msg))  # these front ends read the payload
    return await asyncio.wait_for(session.run(prompt), 30)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_yes_runs_and_is_recorded_as_the_users(home: Path, script, tmp_path: Path, kind: str) -> None:
    servers, model, requested, field, record = setup(kind, script, tmp_path)
    async with Session(model=model, policy=policy_for(kind), mcp_servers=servers, interactive=True) as session:
        result = await run_with(session, lambda e: e.type == requested and session.submit(answer_for(e, "yes")))
        assert session.snapshot().pending_approvals == {} and session.snapshot().pending_elicitations == {}
    assert executed(kind, record) == (["k"] if kind == "approval" else ["accept"])
    assert resolutions(result.items, kind, field) == [("approve" if kind == "approval" else "accept", "user", None)]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_no_is_recorded_and_the_call_goes_on_without_it(home: Path, script, tmp_path: Path, kind: str) -> None:
    servers, model, requested, field, record = setup(kind, script, tmp_path)
    async with Session(model=model, policy=policy_for(kind), mcp_servers=servers, interactive=True) as session:
        result = await run_with(session, lambda e: e.type == requested and session.submit(answer_for(e, "no")))
    outputs = [i.output for i in result.items if i.type == "function_call_output"]
    if kind == "approval":
        assert executed(kind, record) == []
        assert resolutions(result.items, kind, field) == [("deny", "user", "not now")]
        assert "The user denied this call; it did not run. Reason: not now" in outputs[0]
    else:
        assert executed(kind, record) == ["decline"]
        assert resolutions(result.items, kind, field) == [("decline", "user", None)]
    assert result.status == "completed"


@pytest.mark.parametrize("kind", KINDS)
async def test_an_interrupt_while_asking_ends_the_ask_as_interrupted(
    home: Path, script, tmp_path: Path, kind: str
) -> None:
    servers, model, requested, field, record = setup(kind, script, tmp_path)
    async with Session(model=model, policy=policy_for(kind), mcp_servers=servers, interactive=True) as session:
        result = await run_with(session, lambda e: e.type == requested and session._interrupt("stop"))
        assert session.snapshot().pending_approvals == {} and session.snapshot().pending_elicitations == {}
        # A question's wait is the server's, not the turn's: its record may land just after the turn.
        for _ in range(500):
            if resolutions(session._thread.items, kind, field):
                break
            await asyncio.sleep(0.01)
        items = session._thread.items
    assert result.status == "aborted"
    fallback = "deny" if kind == "approval" else "cancel"
    assert resolutions(items, kind, field) == [(fallback, "interrupt", "The turn was interrupted.")]
    assert "k" not in executed(kind, record)


@pytest.mark.parametrize("kind", KINDS)
async def test_an_unanswered_ask_times_out(home: Path, script, tmp_path: Path, kind: str) -> None:
    servers, model, requested, field, record = setup(kind, script, tmp_path)
    seen: list[EventMsg] = []
    async with Session(model=model, policy=policy_for(kind), mcp_servers=servers, interactive=True) as session:
        session._config.approval_timeout_sec = session._config.elicitation_timeout_sec = 0.3
        result = await run_with(session, lambda e: e.type == requested and seen.append(e))
    assert len(seen) == 1  # it was asked, and no one answered
    fallback = "deny" if kind == "approval" else "cancel"
    assert resolutions(result.items, kind, field) == [(fallback, "timeout", "No answer within 0.3 s.")]
    assert executed(kind, record) == ([] if kind == "approval" else ["cancel"])


@pytest.mark.parametrize("kind", KINDS)
async def test_an_ask_its_front_end_cannot_put_ends_unanswered_at_once(
    home: Path, script, tmp_path: Path, kind: str
) -> None:
    """A front end that knows no answer will come (its client failed to show the ask) settles it
    at once: nobody answered, so it is neither the user's no nor a wait for the timeout."""
    servers, model, requested, field, record = setup(kind, script, tmp_path)
    async with Session(model=model, policy=policy_for(kind), mcp_servers=servers, interactive=True) as session:
        settled: dict[str, bool] = {}

        def front_end(event: EventMsg) -> None:
            if event.type == requested:
                key = getattr(event, field_of_id(kind))
                session.submit(AskUnanswered(id=key, reason="The client failed."))
                settled[key] = True

        result = await run_with(session, front_end)  # bounded well under the 600 s timeouts
        [key] = settled
        with pytest.raises(OpRejected, match="no pending"):  # a finished ask is settled once
            session.submit(AskUnanswered(id=key, reason="again"))
    assert settled == {key: True}
    fallback = "deny" if kind == "approval" else "cancel"
    assert resolutions(result.items, kind, field) == [(fallback, "unanswered", "The client failed.")]
    assert executed(kind, record) == ([] if kind == "approval" else ["cancel"])
    if kind == "approval":
        [told] = [i.output for i in result.items if i.type == "function_call_output"]
        assert "This call was not approved; it did not run. Reason: The client failed." in told, told
    assert result.status == "completed"


@pytest.mark.parametrize("who", ["no front end", "policy never"])
@pytest.mark.parametrize("kind", KINDS)
async def test_an_ask_no_one_can_answer_is_declined_without_a_live_request(
    home: Path, script, tmp_path: Path, kind: str, who: str
) -> None:
    """The same rule for both kinds: nothing is shown that no one could answer; the recorded
    resolution (and the event that announces it) says why."""
    servers, model, requested, field, record = setup(kind, script, tmp_path)
    policy, interactive = ("never", True) if who == "policy never" else (policy_for(kind), False)
    if kind == "elicitation" and policy == "never":
        servers["ask"].default_tools_approval_mode = "approve"  # the call runs; its question cannot be asked
    seen: list[EventMsg] = []
    async with Session(model=model, policy=policy, mcp_servers=servers, interactive=interactive) as session:
        result = await run_with(session, seen.append)
    assert [e for e in seen if e.type == requested] == []
    resolved = [e for e in seen if e.type == requested.replace("requested", "resolved")]
    reason = "policy 'never'" if who == "policy never" else "no front end is attached to ask"
    ((answer, by, message),) = resolutions(result.items, kind, field)
    assert (answer, by) == (("deny" if kind == "approval" else "decline"), "policy")
    assert reason in message and [e.message for e in resolved] == [message]
    assert executed(kind, record) == ([] if kind == "approval" else ["decline"])


async def test_asks_pending_at_once_are_answered_each_by_its_own_id(home: Path, script, tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    prompt = ToolConfig(approval_mode="prompt")  # known safe, so both calls run (and ask) together
    servers = {"feat": server_cfg("features.py", record, trusted=True, tools={"read_note": prompt})}
    both = {"tool_calls": [{"name": READ, "arguments": {"key": "a"}}, {"name": READ, "arguments": {"key": "b"}}]}
    model = script(both, {"text": "done"})
    asked: list[EventMsg] = []
    pending_when_both: list[set[str]] = []
    async with Session(model=model, mcp_servers=servers, interactive=True) as session:

        def front_end(event: EventMsg) -> None:
            if event.type != "approval_requested":
                return
            asked.append(event)
            if len(asked) == 2:  # answer the second first: each answer reaches its own call
                pending_when_both.append(set(session.snapshot().pending_approvals))
                session.submit(ApprovalDecision(call_id=asked[1].call_id, decision="approve"))
                session.submit(ApprovalDecision(call_id=asked[0].call_id, decision="deny"))

        result = await run_with(session, front_end)
    assert pending_when_both == [{asked[0].call_id, asked[1].call_id}]
    assert [e.arguments["key"] for e in asked] == ["a", "b"]
    assert [r["key"] for r in records(record)] == ["b"]
    by_call = {i.call_id: (i.decision, i.by) for i in result.items if i.type == "approval"}
    assert by_call == {asked[0].call_id: ("deny", "user"), asked[1].call_id: ("approve", "user")}


@pytest.mark.parametrize("kind", KINDS)
async def test_an_answer_for_an_unknown_or_finished_ask_is_refused_with_a_warning(
    home: Path, script, tmp_path: Path, kind: str
) -> None:
    servers, model, requested, field, record = setup(kind, script, tmp_path)
    warnings: list[str] = []
    refused: list[bool] = []
    async with Session(model=model, policy=policy_for(kind), mcp_servers=servers, interactive=True) as session:
        desk = session._approvals if kind == "approval" else session._elicitations

        def front_end(event: EventMsg) -> None:
            if event.type == "warning":
                warnings.append(event.message)
            if event.type == requested:
                stranger = answer_for(event, "no").model_copy(update={field_of_id(kind): "nobody"})
                refused.append(desk.answer(stranger) is None)  # the real ask still waits
                assert desk.answer(answer_for(event, "yes")) is None

        result = await run_with(session, front_end)
        late = [i for i in result.items if i.type == kind][0]
        again = answer_for_id(kind, getattr(late, field_of_id(kind)))
        refused.append(desk.answer(again) is None)
    assert refused == [False, False]
    noun = "approval with call id" if kind == "approval" else "elicitation with request id"
    finished = getattr(late, field_of_id(kind))
    assert [w for w in warnings if w.startswith("no pending")] == [
        f"no pending {noun} 'nobody'",
        f"no pending {noun} {finished!r}",
    ]
    assert resolutions(result.items, kind, field)[0][:2] == ("approve" if kind == "approval" else "accept", "user")


def field_of_id(kind: str) -> str:
    return "call_id" if kind == "approval" else "request_id"


def answer_for_id(kind: str, key: str) -> Op:
    if kind == "approval":
        return ApprovalDecision(call_id=key, decision="deny")
    return ElicitationResponse(request_id=key, action="decline")
