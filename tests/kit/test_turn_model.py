"""The turn model every front end draws, folded from the events of real turns: a replay model,
real MCP servers over stdio, approvals and a question answered as a person would."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from nbagent import Session
from nbagent.kit.turn import CardChanged, Ended, Header, MessageChanged, QuestionChanged, TurnModel, header_text
from nbagent.protocol import AgentMessageDelta, ApprovalDecision, ElicitationResponse, Event, TokenCount, TurnAborted
from tests.mcp.conftest import server_cfg

FEATURES = "mcp__feat__"


def calls(*named: tuple[str, dict]) -> dict:
    return {"tool_calls": [{"name": name, "arguments": arguments} for name, arguments in named]}


async def run_turn(model: str, servers: dict, answer, goal: str = "go") -> list[Event]:
    """The events a subscriber of one real turn sees, in order; ``answer`` answers the asks."""
    events: list[Event] = []
    async with Session(model=model, policy="untrusted", mcp_servers=servers, interactive=True) as session:

        def seen(event: Event) -> None:
            events.append(event)
            if (op := answer(event)) is not None:
                session.submit(op)

        session.subscribe(seen)
        await asyncio.wait_for(session.run(goal), 30)
    return events


async def test_a_turn_with_approved_denied_and_progressing_calls(home: Path, script, tmp_path: Path) -> None:
    model = script(
        {"reasoning": "Read, delete, then work.", "text": "Let me look.",
         "tool_calls": calls((FEATURES + "read_note", {"key": "r"}), (FEATURES + "delete_note", {"key": "d"}))["tool_calls"]},
        calls((FEATURES + "work", {"steps": 2})),
        {"text": "All done.", "usage": {"input_tokens": 12, "output_tokens": 5}},
    )

    def answer(event: Event) -> ApprovalDecision | None:
        msg = event.msg
        if msg.type != "approval_requested":
            return None
        if msg.raw_tool == "delete_note":
            return ApprovalDecision(call_id=msg.call_id, decision="deny", message="keep it")
        return ApprovalDecision(call_id=msg.call_id, decision="approve")

    events = await run_turn(model, {"feat": server_cfg("features.py")}, answer)
    turn = TurnModel()
    changes = [turn.apply(event) for event in events]

    read, delete, work = turn.cards.values()
    assert (read.tool, read.server, read.raw_tool, read.arguments) == (FEATURES + "read_note", "feat", "read_note", {"key": "r"})
    assert read.label == "Read a note — feat · read_note" and read.begun
    assert read.status == "completed" and read.end is not None and not read.end.is_error
    assert read.approval is not None and read.approval.ask is not None and read.approval.runs
    assert read.approval.answer is not None and (read.approval.answer.decision, read.approval.answer.by) == ("approve", "user")
    assert delete.status == "denied" and delete.approval is not None and not delete.approval.runs
    assert delete.approval.answer is not None and delete.approval.answer.message == "keep it"
    assert delete.end is not None and delete.end.status == "denied"
    assert work.status == "completed" and work.progress is not None
    assert (work.progress.progress, work.progress.total, work.progress.message) == (2, 2, "step 2")
    parts = [(c.card.call_id, c.part) for c in changes if isinstance(c, CardChanged) and c.card is work]
    assert [p for _, p in parts][:3] == ["begun", "asked", "decided"] and parts[-1][1] == "ended"

    [message] = [m for m in turn.messages.values() if m.text == "Let me look."]
    assert message.done and [m.text for m in turn.messages.values()][-1] == "All done."
    assert [r.text for r in turn.reasoning.values()] == ["Read, delete, then work."]
    streamed = [c.delta for c in changes if isinstance(c, MessageChanged) and c.message is message]
    assert "".join(streamed) == "Let me look."  # the deltas join to the final text
    counts = [e.msg.info for e in events if isinstance(e.msg, TokenCount) and e.msg.info]
    assert len(counts) == 3 and (counts[-1].last_token_usage.input_tokens, counts[-1].last_token_usage.output_tokens) == (12, 5)
    assert turn.usage == counts[-1].total_token_usage  # every request of the turn (a new thread's only turn)
    assert turn.servers["feat"].status == "ready" and turn.servers["feat"].tools > 0
    assert turn.ending is not None and turn.ending.status == "completed" and turn.ending.reason == "All done."
    assert [c.ending for c in changes if isinstance(c, Ended)] == [turn.ending] and turn.done


async def test_a_question_asked_during_a_call_lands_on_its_card(home: Path, script, tmp_path: Path) -> None:
    model = script(calls(("mcp__forms__ask_default", {})), {"text": "asked"})

    def answer(event: Event) -> ElicitationResponse | ApprovalDecision | None:
        msg = event.msg
        if msg.type == "approval_requested":
            return ApprovalDecision(call_id=msg.call_id, decision="approve")
        if msg.type == "elicitation_requested":
            return ElicitationResponse(request_id=msg.request_id, action="accept", content={"note": "hello"})
        return None

    events = await run_turn(model, {"forms": server_cfg("elicit_forms.py", tmp_path / "rec.jsonl", protocol="legacy")}, answer)
    turn = TurnModel()
    asked: list[tuple[object, bool]] = []  # each question change as it was handed out
    for event in events:
        if isinstance(change := turn.apply(event), QuestionChanged):
            asked.append((change.card, change.question.answered))
    [card] = turn.cards.values()
    [question] = card.questions
    assert question.ask is not None and question.ask.message == "Question ask_default" and question.call_id == card.call_id
    assert question.answer is not None and (question.answer.action, question.answer.by) == ("accept", "user")
    assert question.answer.content == {"note": "hello"}
    assert asked == [(card, False), (card, True)]
    assert card.status == "completed" and card.end is not None and "hello" in card.end.output


async def test_a_failed_turn_ends_the_model_with_its_code(home: Path, script) -> None:
    events = await run_turn(script(), {}, lambda _e: None)
    turn = TurnModel()
    for event in events:
        turn.apply(event)
    assert turn.ending is not None and turn.ending.status == "failed" and turn.ending.code == "replay_exhausted"


def test_calls_seen_only_by_their_end_or_answer_still_have_a_card() -> None:
    """A view that starts mid-turn (an MCP caller's next round) still names what it is told."""
    turn = TurnModel()
    turn.apply(Event.model_validate({"type": "approval_resolved", "call_id": "c1", "decision": "deny", "by": "timeout"}))
    turn.apply(Event.model_validate({"type": "tool_call_end", "call_id": "c1", "tool": "t", "output": "no", "status": "denied"}))
    card = turn.cards["c1"]
    assert not card.begun and card.tool == "t" and card.status == "denied"
    assert card.approval is not None and card.approval.ask is None and not card.approval.runs
    turn.apply(Event(msg=TurnAborted(reason="interrupted")))
    assert turn.ending is not None and (turn.ending.status, turn.ending.reason) == ("aborted", "interrupted")


def test_the_header_is_named_once_for_every_display() -> None:
    header = Header(model_label="x.json", scripted=True, thread="a\nb", policy="full-auto", context=True)
    text = header_text(header)
    assert text.parts() == ["scripted model (x.json)", "thread a\\nb", "policy full-auto: EVERY tool call runs without asking",
                            "notebook context on"]
    assert text.loud and not header_text(Header(model_label="m", scripted=False, thread="t", policy="never")).loud


def test_a_long_stream_folds_in_linear_time() -> None:
    """A 1 MB message in 5-character deltas: joined once when read, not copied on every delta
    (joining as it came took ~48 s here; the pieces take ~0.3 s)."""
    turn = TurnModel()
    deltas = [Event(msg=AgentMessageDelta(item_id="m", delta="word ")) for _ in range(200_000)]
    started = time.perf_counter()
    for event in deltas:
        turn.apply(event)
    assert turn.messages["m"].text == "word " * 200_000
    assert time.perf_counter() - started < 10
