"""A turn: model rounds until the model answers without a tool call, known-safe calls in
parallel and the rest one by one, call ids unique in the thread, an interrupt or an "abort"
that closes every open call, and a crashing tool or server that fails its call, not the turn."""

from __future__ import annotations

import asyncio
from pathlib import Path

from nbagent import Session
from nbagent.config import Config, ModelProviderConfig
from nbagent.protocol import ApprovalDecision, Event, FunctionCall, FunctionCallOutput
from nbagent.store import ThreadStore
from tests.core.test_session import assert_thread_valid, outputs_by_call
from tests.mcp.conftest import records, server_cfg


def call(tool: str, **arguments) -> dict:
    return {"name": tool, "arguments": arguments}


async def test_each_round_sends_the_outputs_back_until_the_model_answers(home: Path, script) -> None:
    seen: list[int] = []
    model = script(
        {"tool_calls": [call("count", n=1)]},
        {"tool_calls": [call("count", n=2), call("count", n=3)]},
        {"text": "counted to three"},
    )
    async with Session(model=model, policy="full-auto") as session:
        session.register_tool(lambda n: seen.append(n) or f"seen {n}", name="count")
        result = await asyncio.wait_for(session.run("count"), 10)
    assert result.ok and result.text == "counted to three"
    assert seen == [1, 2, 3]
    kinds = [type(i).__name__ for i in result.items]
    assert kinds == ["UserMessage", "FunctionCall", "FunctionCallOutput",
                     "FunctionCall", "FunctionCall", "FunctionCallOutput", "FunctionCallOutput", "AssistantMessage"]


async def test_a_model_that_never_stops_calling_fails_the_turn_at_max_tool_rounds(home: Path, script) -> None:
    model = script(*[{"tool_calls": [call("again")]}] * 3, {"text": "never reached"}, {"text": "next turn"})
    config = Config(model=model, approval_policy="full-auto", max_tool_rounds=3, home=str(home))
    async with Session(config=config) as session:
        session.register_tool(lambda: "once more", name="again")
        result = await asyncio.wait_for(session.run("loop"), 10)
        assert result.status == "failed" and "max_tool_rounds" in (result.error or "")
        assert_thread_valid(session._thread.items)
        after = await asyncio.wait_for(session.run("stop"), 10)
    assert after.text == "never reached"


async def test_calls_that_need_no_approval_but_may_write_run_one_after_another(home: Path, script) -> None:
    """Not read-only, so not known-safe: the second call starts after the first has ended,
    although the first yields to the loop while it runs."""
    order: list[str] = []

    async def step(name: str) -> str:
        order.append(f"{name} starts")
        for _ in range(5):
            await asyncio.sleep(0)  # a yield, not a wait: a parallel sibling would start here
        order.append(f"{name} ends")
        return name

    model = script({"tool_calls": [call("step", name="a"), call("step", name="b")]}, {"text": "done"})
    async with Session(model=model, policy="full-auto") as session:
        session.register_tool(step)
        result = await asyncio.wait_for(session.run("step twice"), 10)
    assert result.ok and order == ["a starts", "a ends", "b starts", "b ends"]


async def test_read_only_calls_meet_at_a_barrier_so_they_run_together(home: Path, script) -> None:
    barrier = asyncio.Barrier(3)

    async def look(name: str) -> str:
        """Read-only: waits for its siblings, which only parallel execution lets arrive."""
        await asyncio.wait_for(barrier.wait(), 5)
        return name

    model = script({"tool_calls": [call("look", name=n) for n in "abc"]}, {"text": "all seen"})
    async with Session(model=model) as session:
        session.register_tool(look, read_only=True)
        result = await asyncio.wait_for(session.run("look"), 10)
    assert result.ok
    assert sorted(o.output for o in outputs_by_call(result.items).values()) == ["a", "b", "c"]


async def test_a_server_that_reuses_call_ids_still_gets_one_id_per_call(home: Path, script) -> None:
    """Some OpenAI-compatible servers number calls ``call_0`` in every response."""
    model = script(
        {"tool_calls": [{**call("echo", text="one"), "call_id": "call_0"}, {**call("echo", text="two"), "call_id": "call_0"}]},
        {"tool_calls": [{**call("echo", text="three"), "call_id": "call_0"}]},
        {"text": "echoed"},
        {"tool_calls": [{**call("echo", text="four"), "call_id": "call_0"}]},
        {"text": "echoed again"},
    )
    async with Session(model=model, policy="full-auto") as session:
        session.register_tool(lambda text: text, name="echo")
        await asyncio.wait_for(session.run("echo"), 10)
        await asyncio.wait_for(session.run("echo more"), 10)
        history = list(session._thread.items)
        thread_id = session._thread.id
    calls = [i for i in history if isinstance(i, FunctionCall)]
    ids = [c.call_id for c in calls]
    assert len(ids) == len(set(ids)) == 4 and ids[0] == "call_0"
    outputs = {i.call_id: i.output for i in history if isinstance(i, FunctionCallOutput)}
    assert [outputs[c.call_id] for c in calls] == ["one", "two", "three", "four"]
    with ThreadStore(home) as store:
        assert [i.call_id for i in store.load(thread_id).items if isinstance(i, FunctionCall)] == ids


async def test_reused_call_ids_over_http_each_get_their_own_output(openai_server, home: Path) -> None:
    """The real ``openai`` client on the chat wire: the model reads one output per call."""
    openai_server.script([
        {"tool_calls": [{"name": "echo", "arguments": {"text": "one"}, "call_id": "call_0"},
                        {"name": "echo", "arguments": {"text": "two"}, "call_id": "call_0"}]},
        {"text": "echoed"},
    ])
    config = Config(
        model="test-model", model_provider="local", approval_policy="full-auto", home=str(home),
        model_providers={"local": ModelProviderConfig(base_url=openai_server.base_url, wire_api="chat")},
    )
    config.api_key = "sk-test-turn"
    async with Session(config=config) as session:
        session.register_tool(lambda text: text, name="echo")
        result = await asyncio.wait_for(session.run("echo"), 20)
    assert result.ok and result.text == "echoed"
    sent = [m for m in openai_server.requests[-1]["messages"] if m.get("role") == "tool"]
    assert len({m["tool_call_id"] for m in sent}) == 2 and sorted(m["content"] for m in sent) == ["one", "two"]


async def test_abort_in_a_parallel_batch_cancels_the_other_calls_and_gives_each_one_output(home: Path, script) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()
    finished: list[str] = []

    async def slow_read(name: str) -> str:
        """Read, until the turn ends."""
        started.set()
        try:
            await asyncio.Event().wait()  # only a cancellation ends this
        except asyncio.CancelledError:
            cancelled.set()
            raise
        finished.append(name)
        return "contents"

    def checked_read(name: str) -> str:
        """Read, after asking."""
        return "checked"

    model = script(
        {"tool_calls": [call("slow_read", name="a"), call("checked_read", name="b")]},
        {"text": "next turn"},
    )
    async with Session(model=model, interactive=True) as session:
        session.register_tool(slow_read, read_only=True)
        session.register_tool(checked_read, read_only=True, approval_mode="prompt")

        async def abort_once_both_run(call_id: str) -> None:
            await started.wait()
            session.submit(ApprovalDecision(call_id=call_id, decision="abort"))

        answers: list[asyncio.Task] = []
        session.subscribe(
            lambda e: e.msg.type == "approval_requested"
            and answers.append(asyncio.ensure_future(abort_once_both_run(e.msg.call_id)))
        )
        result = await asyncio.wait_for(session.run("read both"), 5)
        await asyncio.gather(*answers)
        history = list(session._thread.items)
        thread_id = session._thread.id
    assert result.status == "aborted"
    assert cancelled.is_set() and finished == []  # the sibling was stopped, not left running
    outputs = [i.call_id for i in history if isinstance(i, FunctionCallOutput)]
    calls = [i.call_id for i in history if isinstance(i, FunctionCall)]
    assert sorted(outputs) == sorted(calls) and len(set(outputs)) == len(outputs) == 2
    with ThreadStore(home) as store:
        loaded = store.load(thread_id)
    stored = [i.call_id for i in loaded.items if isinstance(i, FunctionCallOutput)]
    assert sorted(stored) == sorted(calls)


async def test_an_interrupted_call_gets_its_tool_call_end_before_the_turn_aborts(home: Path, script) -> None:
    started = asyncio.Event()

    async def hang() -> str:
        """Never finishes on its own."""
        started.set()
        await asyncio.Event().wait()
        return "late"

    model = script({"tool_calls": [call("hang"), call("hang")]})
    seen: list[Event] = []
    async with Session(model=model, policy="full-auto") as session:
        session.register_tool(hang)
        session.subscribe(seen.append)
        turn = asyncio.ensure_future(session.run("hang"))
        await asyncio.wait_for(started.wait(), 5)
        session._interrupt("stop pressed")
        result = await asyncio.wait_for(turn, 5)
        assert_thread_valid(session._thread.items)
    assert result.status == "aborted"
    kinds = [e.msg.type for e in seen]
    begins = [e.msg for e in seen if e.msg.type == "tool_call_begin"]
    ends = [e.msg for e in seen if e.msg.type == "tool_call_end"]
    assert len(begins) == 1  # the second call never started
    assert [(e.call_id, e.status, e.is_error) for e in ends] == [(begins[0].call_id, "aborted", True)]
    assert "stop pressed" in ends[0].output
    assert kinds.index("tool_call_end") < kinds.index("turn_aborted")


async def test_a_crashing_server_fails_its_calls_and_the_turn_goes_on(home: Path, script, tmp_path: Path) -> None:
    """A tool that raises, then a server that dies mid-call: each is a failed output the model
    reads, and the next round's Python tool still runs."""
    record = tmp_path / "record.jsonl"
    model = script(
        {"tool_calls": [call("mcp__crashy__boom")]},
        {"tool_calls": [call("mcp__crashy__die", code=3)]},
        {"tool_calls": [call("carry_on")]},
        {"text": "both failed, I carried on"},
    )
    servers = {"crashy": server_cfg("crashy.py", record, trusted=True)}
    async with Session(model=model, policy="full-auto", mcp_servers=servers) as session:
        session.register_tool(lambda: "still here", name="carry_on")
        result = await asyncio.wait_for(session.run("crash it"), 60)
    assert result.ok and result.text == "both failed, I carried on"
    raised, died, carried = outputs_by_call(result.items).values()
    assert raised.is_error and raised.status == "failed" and "boom failed" in raised.output
    assert died.is_error and died.status == "failed" and "closed the connection" in died.output
    assert "dying with code 3" in died.output  # the server's own last words
    assert not carried.is_error and carried.output == "still here"
    assert [r["tool"] for r in records(record)] == ["boom", "die"]
