"""A stdio connection's own ``tools/call`` lane (nbagent/mcp/direct.py), against real servers:
what the SDK's request machinery did for a call, the lane does too."""

from __future__ import annotations

from nbagent.protocol import McpLog, TextBlock, ToolSpec
from nbagent.protocol.elicitation import ElicitOutcome
from tests.waiting import until

from .conftest import Harness, call_info, records


def _text(result) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextBlock))


def _spec(manager, raw: str) -> ToolSpec:
    return next(s for s in manager.list_tools() if s.raw_name == raw)


async def test_a_question_asked_the_2026_way_is_answered_and_the_call_resumed(harness: Harness) -> None:
    harness.answers.outcomes = [ElicitOutcome(action="accept", content={"sure": True})]
    manager = await harness.start({"asks": harness.cfg("asks_again.py")})
    assert manager.status()["asks"].protocol_version == "2026-07-28"
    result = await manager.call_tool(_spec(manager, "confirm"), {}, call_info("call_q"))
    assert not result.is_error and _text(result) == "accept {'sure': True}"
    [asked] = harness.answers.asked
    assert asked.message == "Really do it?" and asked.call_id == "call_q"
    first, second = [r for r in records(harness.record) if r["tool"] == "confirm"]
    assert first["responses"] is None and first["state"] is None
    assert second["state"] == "round-1" and second["responses"] == {"sure": {"action": "accept", "content": {"sure": True}}}
    assert first["id"] != second["id"]  # each round is a request of its own


async def test_a_call_given_up_tells_the_server_and_the_connection_keeps_serving(harness: Harness) -> None:
    manager = await harness.start({"asks": harness.cfg("asks_again.py", tool_timeout_sec=0.5)})
    slow = await manager.call_tool(_spec(manager, "wait"), {}, call_info("call_w"))
    assert slow.is_error and "timed out after 0.5 s" in _text(slow)
    started = next(r for r in records(harness.record) if r["tool"] == "wait")
    cancelled = await until(
        lambda: next((r for r in records(harness.record) if r["tool"] == "wait-cancelled"), None),
        "the server to see the cancellation", 5,
    )
    assert cancelled["id"] == started["id"]
    sent = [m.message for m in manager.wire("asks") if m.method == "notifications/cancelled"]
    assert sent and sent[-1]["params"]["requestId"] == started["id"]
    again = await manager.call_tool(_spec(manager, "twice"), {}, call_info("call_t"))
    assert not again.is_error and _text(again) == "done"


async def test_the_lane_records_its_traffic_for_inspect_wire(harness: Harness) -> None:
    manager = await harness.start({"asks": harness.cfg("asks_again.py")})
    await manager.call_tool(_spec(manager, "twice"), {}, call_info("call_t"))
    request, reply = [m for m in manager.wire("asks") if m.method == "tools/call" or m.kind == "response"][-2:]
    assert request.direction == "sent" and request.message["params"]["name"] == "twice"
    assert reply.direction == "received" and reply.id == request.id
    # The 2026-07-28 stamp the SDK puts on its own requests rides on the lane's too.
    meta = request.message["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "nbagent"


async def test_replies_no_call_asked_for_are_dropped(harness: Harness) -> None:
    """A server that repeats a reply, answers an id no one used, answers the next call before it
    is made and reports progress for no one: each call still gets its own answer."""
    manager = await harness.start({"twice": harness.cfg("replies_twice.py")})
    seen: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    for n in range(3):
        result = await manager.call_tool(_spec(manager, "say"), {"text": f"n{n}"}, call_info(f"c{n}"), on_progress)
        assert not result.is_error and _text(result) == f"n{n}"
    assert seen == [] and manager.status()["twice"].state == "ready"
    assert len(records(harness.record)) == 3



async def test_the_wire_record_keeps_the_order_messages_were_read_in(harness: Harness) -> None:
    """A log line and the reply read at once: the SDK gets the log, the lane takes the reply,
    and ``inspect wire`` still shows them in the order the server sent them."""
    manager = await harness.start({"twice": harness.cfg("replies_twice.py")})
    await manager.call_tool(_spec(manager, "say"), {"text": "hi"}, call_info("c1"))
    received = [m for m in manager.wire("twice") if m.direction == "received"]
    log = next(i for i, m in enumerate(received) if m.method == "notifications/message")
    assert received[log + 1].kind == "response" and received[log + 1].message["result"]["content"][0]["text"] == "hi"


async def test_what_the_server_sent_before_its_reply_is_handled_before_the_call_returns(harness: Harness) -> None:
    """The server logs, then answers, in one write: the log reaches nbagent before the call's
    result does, as through the SDK's own call (a ``tools/list_changed`` sent the same way must
    be known before the next call is approved)."""
    manager = await harness.start({"twice": harness.cfg("replies_twice.py")})
    for n in range(5):
        await manager.call_tool(_spec(manager, "say"), {"text": f"n{n}"}, call_info(f"c{n}"))
        assert f"saying n{n}" in [e.data for e in harness.of(McpLog)], n
