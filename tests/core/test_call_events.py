"""A call's own events: inside the sink the core sets they reach it; outside any call (a tool
used from a script) they go nowhere, and a call's sink never leaks past it."""

from __future__ import annotations

import asyncio

from nbagent.calls.events import emit, events_to
from nbagent.protocol import EventMsg, WarningEvent


async def test_events_reach_the_sink_of_their_own_call_only() -> None:
    first: list[EventMsg] = []
    second: list[EventMsg] = []

    async def call(sink: list[EventMsg], text: str) -> None:
        with events_to(sink.append):
            await asyncio.sleep(0)  # the other call runs meanwhile
            assert emit(WarningEvent(message=text))

    await asyncio.gather(call(first, "a"), call(second, "b"))
    assert [e.message for e in first] == ["a"] and [e.message for e in second] == ["b"]  # type: ignore[union-attr]
    assert emit(WarningEvent(message="nowhere")) is False
