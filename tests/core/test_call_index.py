"""Outside calls (``Session.call_tool``) write their thread's index row in batches; every
listing still counts every call: in this process at once, in another within the interval, and
after the session closes exactly."""

from __future__ import annotations

from pathlib import Path

from nbagent import Session
from nbagent.protocol import CallTool
from nbagent.store import ThreadStore
from tests.waiting import until

CALLS = 5


def turns_listed(store: ThreadStore, thread_id: str) -> int | None:
    return next((t.turns for t in store.list_threads() if t.id == thread_id), None)


async def test_every_outside_call_is_counted_by_each_listing(home: Path, script) -> None:
    async with Session(model=script()) as session:
        session.register_tool(lambda: "ok", name="noop")
        for _ in range(CALLS):
            assert (await session.perform(CallTool(name="noop", arguments={}, policy="full-auto"))).status == "completed"
        thread_id = session._thread.id
        assert next(t.turns for t in session._thread.saved() if t.id == thread_id) == CALLS
        with ThreadStore(home) as other:  # as another process sees the index: its own connection
            await until(lambda: turns_listed(other, thread_id) == CALLS, f"{CALLS} turns listed elsewhere")
        more = await session.perform(CallTool(name="noop", arguments={}, policy="full-auto"))
        assert more.status == "completed"
    with ThreadStore(home) as after:
        assert turns_listed(after, thread_id) == CALLS + 1
