"""Each op a front end sends ends with the event docs/contracts.md names, on the stream as well as
from ``perform``; a submitted op that fails is an error event naming it, never a silent drop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.core.handlers import OpFailed, OpRejected
from nbagent.protocol import (
    ApprovalDecision,
    AskUnanswered,
    CallTool,
    Compact,
    ContextCompacted,
    ErrorEvent,
    Event,
    Inspect,
    InspectResult,
    Interrupt,
    ListMcpTools,
    ListThreads,
    McpListToolsResponse,
    NewThread,
    OverrideTurnContext,
    RenameThread,
    ResumeThread,
    SessionConfigured,
    ThreadList,
    ThreadRenamed,
    ToolCallEnd,
)
from tests.waiting import until


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("NBAGENT_MODEL", raising=False)
    return tmp_path / "home"


async def test_thread_ops_switch_name_and_list_threads_as_the_snapshot_then_says(home: Path, tmp_path: Path) -> None:
    async with Session(home=home, cwd=tmp_path) as session:
        session.register_tool(lambda: "ok", name="noop", read_only=True)
        await session.perform(CallTool(name="noop"))  # a thread is stored from its first turn
        first = session.snapshot().thread_id
        renamed = await session.perform(RenameThread(name="first"))
        assert renamed == ThreadRenamed(name="first") and session.snapshot().thread_name == "first"

        opened = await session.perform(NewThread(name="second"))
        assert isinstance(opened, SessionConfigured) and opened.thread_name == "second"
        assert session.snapshot().thread_id != first and session.snapshot().items == ()

        listed = await session.perform(ListThreads())
        assert isinstance(listed, ThreadList) and [t.id for t in listed.threads] == [first]
        back = await session.perform(ResumeThread(thread="first"))
        assert isinstance(back, SessionConfigured) and session.snapshot().thread_id == first
        with pytest.raises(KeyError, match="no thread"):
            await session.perform(ResumeThread(thread="never-saved"))


async def test_override_turn_context_changes_what_later_turns_run_with(home: Path, tmp_path: Path) -> None:
    async with Session(home=home, cwd=tmp_path, policy="on-request") as session:
        said = await session.perform(OverrideTurnContext(policy="never", interactive=True))
        assert isinstance(said, SessionConfigured) and said.policy == "never"
        now = session.snapshot()
        assert (now.policy, now.interactive) == ("never", True)


async def test_an_outside_call_ends_with_its_tool_call_end_and_inspect_shows_the_tool(home: Path, tmp_path: Path) -> None:
    async with Session(home=home, cwd=tmp_path) as session:
        session.register_tool(lambda a: a * 2, name="double", read_only=True)
        ended = await session.perform(CallTool(name="double", arguments={"a": 21}, policy="full-auto"))
        assert isinstance(ended, ToolCallEnd) and (ended.output, ended.status, ended.is_error) == ("42", "completed", False)
        listed = await session.perform(ListMcpTools())
        assert isinstance(listed, McpListToolsResponse) and [t.name for t in listed.tools] == ["double"]
        views = await session.perform(Inspect(view="tools"))
        assert isinstance(views, InspectResult) and [v.name for v in views.data] == ["double"]
        assert isinstance(await session.perform(Inspect(view="request")), InspectResult)  # no request yet: data None


async def test_a_submitted_op_that_fails_is_an_error_event_naming_it(home: Path, tmp_path: Path) -> None:
    events: list[Event] = []
    async with Session(home=home, cwd=tmp_path) as session:
        session.subscribe(events.append)
        session.submit(Compact())  # no model is configured
        await until(lambda: any(isinstance(e.msg, ErrorEvent) for e in events), "the error event")
        (error,) = [e.msg for e in events if isinstance(e.msg, ErrorEvent)]
        assert error.code == "compact" and error.message.startswith("compact failed: ConfigError")
        with pytest.raises(Exception, match="no model configured") as raised:
            await session.perform(Compact())
        assert "while doing the op 'compact'" in raised.value.__notes__
        with pytest.raises(OpFailed, match="no such turn"):
            await session.perform(Interrupt())
        with pytest.raises(TypeError, match="not an op: 'compact'"):
            await session.perform("compact")  # type: ignore[arg-type]


async def test_an_answer_for_no_waiting_ask_is_rejected_saying_why(home: Path, tmp_path: Path) -> None:
    async with Session(home=home, cwd=tmp_path) as session:
        with pytest.raises(OpRejected, match="no pending approval with call id 'nobody'"):
            session.submit(ApprovalDecision(call_id="nobody", decision="approve"))
        with pytest.raises(OpRejected, match="no pending elicitation with request id 'nobody'"):
            session.submit(AskUnanswered(id="nobody", reason="the form could not be built"))


async def test_compact_ends_with_context_compacted(home: Path, tmp_path: Path) -> None:
    script = tmp_path / "replay.json"
    script.write_text(json.dumps({"responses": [{"text": "one"}, {"text": "two"}, {"text": "three"}],
                                  "summaries": ["The user said hello twice."]}))
    async with Session(model=f"replay:{script}", home=home, cwd=tmp_path) as session:
        nothing = await session.perform(Compact())
        assert not isinstance(nothing, ContextCompacted)  # a warning: nothing to summarise yet
        await session.run("hello")
        await session.run("hello again")
        result = await session.run("and?")
        done = await session.perform(Compact())
    assert result.ok and result.text  # RunResult read from the turn's events
    assert isinstance(done, ContextCompacted) and done.reason == "asked"
