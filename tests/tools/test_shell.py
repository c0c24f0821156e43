"""The native ``shell`` tool in a real session: a replay model calls it, the command runs in the
real sandbox through the launcher, and the approvals follow Codex's rule for sandboxed commands.
Each test answers the asks as a person would and reads what the model was given."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nbagent import Session
from nbagent.config import load_config
from nbagent.core.inspect import timeline
from nbagent.kit.turn import TurnModel
from nbagent.mcp.proctree import alive
from nbagent.protocol import (
    ApprovalDecision,
    ApprovalRequested,
    Event,
    ExecCommandOutputDelta,
    Interrupt,
    Policy,
    SandboxDenied,
    ToolCallEnd,
)
from nbagent.sandbox import available
from nbagent.tools import ShellTools, shell_policy
from tests.core.conftest import home, script

__all__ = ["home", "script"]

pytestmark = pytest.mark.skipif(bool(available()), reason=f"no sandbox here: {available()}")

Answer = Callable[[ApprovalRequested], ApprovalDecision | None]


def shell(*argv: str, **more: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "shell", "arguments": {"command": list(argv), **more}}]}


async def run(model: str, policy: Policy, answer: Answer | None = None, on_event: Callable[[Event], None] | None = None) -> list[Event]:
    """One turn with ``shell`` under ``policy``, in the sandbox ``workspace-write`` of the cwd; every event seen."""
    events: list[Event] = []
    async with Session(model=model, policy=policy, interactive=answer is not None) as session:
        session.add_provider(ShellTools(shell_policy(load_config(os.getcwd(), overrides={"sandbox_mode": "workspace-write"}))))

        def seen(event: Event) -> None:
            events.append(event)
            if on_event is not None:
                on_event(event)
            if answer is not None and isinstance(event.msg, ApprovalRequested) and (op := answer(event.msg)) is not None:
                session.submit(op)

        session.subscribe(seen)
        await asyncio.wait_for(session.run("go"), 60)
    return events


def of(events: list[Event], kind: type) -> list[Any]:
    return [e.msg for e in events if isinstance(e.msg, kind)]


async def test_a_command_in_the_workspace_runs_without_asking_and_streams_its_output(home: Path, script) -> None:
    """On-request: no ask. The first line reaches the card while the command still waits for a
    file that only this test creates, on seeing that line: the output streamed before the end."""
    work = Path.cwd()
    wait = "echo first; i=0; while [ ! -e go ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; echo second >&2; touch made"
    model = script(shell("bash", "-c", wait, timeout_ms=30_000), {"text": "done"})

    def on_event(event: Event) -> None:
        if isinstance(event.msg, ExecCommandOutputDelta) and "first" in event.msg.chunk:
            (work / "go").touch()

    events = await run(model, "on-request", on_event=on_event)
    assert not of(events, ApprovalRequested)
    [end] = of(events, ToolCallEnd)
    assert end.status == "completed" and "Exit code: 0" in end.output and "first\nsecond" in end.output, end.output
    assert (work / "made").exists()
    deltas = of(events, ExecCommandOutputDelta)
    assert [d.stream for d in deltas] == ["stdout", "stderr"] and "".join(d.chunk for d in deltas) == "first\nsecond\n"
    turn = TurnModel()
    for event in events:
        turn.apply(event)
    [card] = turn.cards.values()
    assert card.output is not None and card.output.text == "first\nsecond\n"


async def test_a_write_outside_the_workspace_is_denied_and_offered_to_run_outside(home: Path, script, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    model = script(shell("touch", str(outside)), shell("touch", str(outside)), {"text": "done"})
    asked: list[ApprovalRequested] = []

    def answer(request: ApprovalRequested) -> ApprovalDecision:
        asked.append(request)
        decision = "deny" if len(asked) == 1 else "approve"
        return ApprovalDecision(call_id=request.call_id, decision=decision)

    events = await run(model, "on-request", answer)
    first, second = of(events, ToolCallEnd)
    assert len(asked) == 2  # nothing asked before running in the sandbox; once after each denial
    assert "the sandbox refused it" in asked[0].reason and str(outside) in asked[0].reason, asked[0].reason
    assert asked[0].arguments["with_escalated_permissions"] is True
    assert "Permission denied" in first.output and f"denied: touch: cannot touch '{outside}'" in first.output
    assert "not run again outside the sandbox" in first.output and first.is_error
    assert second.status == "completed" and "Exit code: 0" in second.output
    assert outside.exists()  # approved: run again outside


async def test_an_escalated_command_asks_and_the_panel_shows_why(home: Path, script, tmp_path: Path) -> None:
    outside = tmp_path / "escalated.txt"
    model = script(
        shell("touch", str(outside), with_escalated_permissions=True, justification="write the report next door"),
        {"text": "done"},
    )
    asked: list[ApprovalRequested] = []

    def answer(request: ApprovalRequested) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(call_id=request.call_id, decision="approve")

    events = await run(model, "on-request", answer)
    [request] = asked
    assert request.reason == "it asks to run outside the sandbox: write the report next door"
    [end] = of(events, ToolCallEnd)
    assert end.status == "completed" and outside.exists()


async def test_under_never_nothing_asks_and_the_model_reads_the_denial(home: Path, script, tmp_path: Path) -> None:
    outside = tmp_path / "never.txt"
    model = script(
        shell("touch", str(outside)),
        shell("touch", str(outside), with_escalated_permissions=True, justification="please"),
        {"text": "done"},
    )
    events = await run(model, "never", lambda request: pytest.fail(f"asked: {request.reason}"))
    denied, escalated = of(events, ToolCallEnd)
    assert not of(events, ApprovalRequested)
    assert f"denied: touch: cannot touch '{outside}': Permission denied" in denied.output
    assert escalated.status == "denied" and "policy 'never'" in escalated.output, escalated.output
    assert not outside.exists()


async def test_under_untrusted_every_command_asks(home: Path, script) -> None:
    model = script(shell("true"), shell("true"), {"text": "done"})
    asked: list[ApprovalRequested] = []

    def answer(request: ApprovalRequested) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(call_id=request.call_id, decision="approve")

    events = await run(model, "untrusted", answer)
    assert [r.reason for r in asked] == ["policy 'untrusted' asks before every call"] * 2
    assert [e.status for e in of(events, ToolCallEnd)] == ["completed", "completed"]


async def test_a_timeout_kills_the_whole_tree(home: Path, script) -> None:
    """The command leaves a detached grandchild behind (its own session); at the timeout it dies
    too. Found by its unique argument (inside the sandbox's PID namespace its pid is another)."""
    seconds = f"60.{os.getpid()}{os.urandom(2).hex().translate(str.maketrans('abcdef', '123456'))}"
    model = script(shell("bash", "-c", f"setsid sleep {seconds} & sleep {seconds}", timeout_ms=1_000), {"text": "done"})
    events = await run(model, "on-request")
    [end] = of(events, ToolCallEnd)
    assert end.is_error and "command timed out after 1000 milliseconds" in end.output, end.output
    assert end.duration_ms < 15_000
    for _ in range(100):  # swept with SIGKILL; a zombie is not alive
        if not _running(seconds):
            break
        await asyncio.sleep(0.05)
    assert not _running(seconds)


async def test_an_interrupt_kills_the_whole_tree(home: Path, script) -> None:
    """Interrupted once its output shows it started: the command and its detached grandchild die,
    and the turn ends aborted."""
    seconds = f"61.{os.getpid()}{os.urandom(2).hex().translate(str.maketrans('abcdef', '123456'))}"
    model = script(shell("bash", "-c", f"setsid sleep {seconds} & echo started; sleep {seconds}", timeout_ms=60_000), {"text": "done"})
    events: list[Event] = []
    async with Session(model=model, policy="on-request") as session:
        session.add_provider(ShellTools(shell_policy(load_config(os.getcwd(), overrides={"sandbox_mode": "workspace-write"}))))

        def seen(event: Event) -> None:
            events.append(event)
            if isinstance(event.msg, ExecCommandOutputDelta) and "started" in event.msg.chunk:
                session.submit(Interrupt(reason="stop"))

        session.subscribe(seen)
        result = await asyncio.wait_for(session.run("go"), 30)
    assert result.status == "aborted"
    for _ in range(100):
        if not _running(seconds):
            break
        await asyncio.sleep(0.05)
    assert not _running(seconds)


def _running(argument: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                if argument.encode() in fh.read().split(b"\0") and alive(int(name)):
                    found.append(int(name))
        except (OSError, ValueError):
            continue
    return found


async def test_a_line_written_in_pieces_reaches_the_card_whole(home: Path, script) -> None:
    """A secret or a denied path in one line is never split between two events (each event is
    redacted whole)."""
    model = script(shell("bash", "-c", "printf 'tok'; sleep 0.3; printf 'en-1234\\nnext'"), {"text": "done"})
    events = await run(model, "on-request")
    assert [d.chunk for d in of(events, ExecCommandOutputDelta)] == ["token-1234\n", "next"]


async def test_under_untrusted_a_denied_command_is_asked_about_twice_on_one_card(home: Path, script, tmp_path: Path) -> None:
    outside = tmp_path / "twice.txt"
    model = script(shell("touch", str(outside)), {"text": "done"})
    asked: list[ApprovalRequested] = []

    def answer(request: ApprovalRequested) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision(call_id=request.call_id, decision="approve")

    events = await run(model, "untrusted", answer)
    assert asked[0].reason == "policy 'untrusted' asks before every call"
    assert asked[1].reason.startswith("it asks to run outside the sandbox: the sandbox refused it (touch: cannot touch")
    assert asked[0].call_id == asked[1].call_id
    [end] = of(events, ToolCallEnd)
    assert end.status == "completed" and outside.exists()
    turn = TurnModel()
    for event in events:
        turn.apply(event)
    [card] = turn.cards.values()
    assert card.status == "completed" and card.approval is not None and card.approval.ask is asked[1]


async def test_inspect_turn_folds_a_commands_output_into_one_entry(home: Path, script) -> None:
    model = script(shell("bash", "-c", "for i in 1 2 3; do echo line $i; sleep 0.05; done"), {"text": "done"})
    events = await run(model, "on-request")
    view = timeline("t", "u", [e for e in events if e.turn_id is not None], redact=lambda text: text)
    [entry] = [e for e in view.entries if e.type == "exec_command_output_delta"]
    assert entry.count == len(of(events, ExecCommandOutputDelta)) > 1 and "line 1" in entry.detail


async def test_a_denial_is_an_event_a_line_in_every_front_end_and_an_audit_line(home: Path, script, tmp_path: Path) -> None:
    """The runtime sees the sandbox refuse a write: a ``sandbox_denied`` event naming the path,
    drawn once by the turn model and shown by the widget card, the text view, ``nbagent run``'s
    printer and an MCP caller's progress, and written to the audit log."""
    from nbagent.cli import _text
    from nbagent.notebook.render import WidgetTurn
    from nbagent.notebook.text_render import TextTurn
    from nbagent.server.forward import describe
    from tests.notebook.test_command_output import shown

    outside = tmp_path / "denied.txt"
    events = await run(script(shell("touch", str(outside)), {"text": "done"}), "never")
    [denied] = of(events, SandboxDenied)
    assert str(outside) in denied.denied and denied.tool == "shell" and "workspace-write" in denied.sandbox
    assert not outside.exists()

    widget = WidgetTurn(lambda op: None, model_label="replay: x", scripted=True, thread="t", policy="never")
    lines: list[str] = []
    text = TextTurn(lambda op: None, model_label="replay: x", scripted=True, thread="t", policy="never", out=lines.append)
    model, printed, forwarded = TurnModel(), [], []
    for event in events:
        widget.handle(event)
        text.handle(event)
        change = model.apply(event)
        printed.append(_text(change))
        forwarded.append(describe(change, event.msg.type)[0] or "")
    [card] = widget.cards.values()
    for where, said in [("widget", shown(card.widget)), ("text", "".join(lines)), ("run", "".join(printed)),
                        ("mcp", "\n".join(forwarded))]:
        assert "sandbox (workspace-write" in said and str(outside) in said, (where, said)
    audit = [json.loads(line) for f in (home / "audit").glob("*.jsonl") for line in f.read_text().splitlines()]
    [line] = [a for a in audit if a["event"] == "nbagent.sandbox_denial"]
    assert str(outside) in line["denied"] and line["tool"] == "shell"


async def test_a_secret_in_a_justification_or_a_denied_path_never_reaches_the_audit_log(
    home: Path, script, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The audit trail reads events as made and keeps two texts of them: an ask's reason (here the
    model's justification) and what the sandbox denied (here a path). A secret the session knows
    is hidden in both, as the rollout hides it."""
    secret = "audit-env-secret-5d1e8c"
    monkeypatch.setenv("PROBE_API_TOKEN", secret)
    model = script(
        shell("touch", str(tmp_path / "x"), with_escalated_permissions=True, justification=f"the key is {secret}"),
        shell("touch", str(tmp_path / secret)),
        {"text": "done"},
    )
    events = await run(model, "on-request", lambda request: ApprovalDecision(call_id=request.call_id, decision="deny"))
    assert of(events, SandboxDenied), "the second command should have been refused by the sandbox"
    text = "".join(f.read_text() for f in (home / "audit").glob("*.jsonl"))
    lines = [json.loads(line) for line in text.splitlines()]
    assert {"codex.tool_decision", "nbagent.sandbox_denial"} <= {line["event"] for line in lines}
    assert any("the key is" in (line.get("reason") or "") for line in lines)  # the reason is kept, hidden
    assert secret not in text
