"""What ``%agent`` prints into a cell is shown as the rollout keeps it: a secret the model repeats
is redacted in the status's pending approval and in the history, and a thread name that carries
terminal escapes or bidi overrides prints inert, in a cell, a headless header and at a shell, and a failed
server's stderr shows its controls inert in the startup widget. Against a real session and a real MCP server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from nbagent.core.session import Session
from nbagent.notebook.agent import KernelAgent
from nbagent.notebook.commands import run_line
from nbagent.protocol import ApprovalDecision, Event, McpStartupUpdate, TurnCompleted
from tests.cli.proc import nbagent
from tests.mcp.conftest import server_cfg
from tests.waiting import until

SECRET = "tok-SECRET-cmd-5531"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DEMO_API_TOKEN", SECRET)  # a secret by its name: the rollout hides it
    for name in ("NBAGENT_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _replay(tmp_path: Path, *responses: dict) -> str:
    path = tmp_path / "replay.json"
    path.write_text(json.dumps({"responses": list(responses)}))
    return f"replay:{path}"


async def test_status_and_history_redact_a_secret_the_model_repeats(
    home: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    model = _replay(
        home,
        {"text": "Deleting.", "tool_calls": [{"name": "mcp__feat__delete_note", "arguments": {"key": SECRET}}]},
        {"text": f"I did not delete {SECRET}."},
    )
    # The server holds the token itself: a call carrying a secret it was not given is never asked about.
    servers = {"feat": server_cfg("features.py", home / "record.jsonl", env={"DEMO_API_TOKEN": SECRET})}
    agent = KernelAgent(shell=None, session_factory=lambda: Session(
        model=model, policy="on-request", mcp_servers=servers, interactive=True))
    session = await agent.ready()
    try:
        turn = asyncio.create_task(session.run(f"delete the note {SECRET}"))
        call_id = next(iter(await until(lambda: session.snapshot().pending_approvals, "the approval to be asked", timeout=60)))
        run_line(agent, "")
        status = capsys.readouterr().out
        assert f"pending approval {call_id}: mcp__feat__delete_note" in status
        assert SECRET not in status and "[redacted]" in status
        session.submit(ApprovalDecision(call_id=call_id, decision="deny", message="keep it"))
        await asyncio.wait_for(turn, 30)
        held = [getattr(i, "text", "") for i in session._thread.items]  # the history keeps what the rollout does
        assert any("[redacted]" in t for t in held), "nothing to redact: this test shows nothing"
        assert not any(SECRET in t for t in held)

        run_line(agent, "history")
        history = capsys.readouterr().out
        assert SECRET not in history and history.count("[redacted]") >= 2  # the prompt, the call, the reply
        approval = next(line for line in history.splitlines() if line.startswith("approval "))
        assert "deny by user: keep it" in approval  # the decision, not the arguments asked about
    finally:
        await agent.close()


HOSTILE_NAME = "ok\x1b]52;c;ZWNobyBwd24=\x07\u202eevil\nforged line"


async def test_a_thread_name_with_escapes_prints_inert(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hostile = HOSTILE_NAME
    agent = KernelAgent(shell=None, session_factory=lambda: Session(model=_replay(home, {"text": "hi"}), thread_name=hostile))
    session = await agent.ready()
    try:
        await session.run("hello")
        run_line(agent, "threads")
        out = capsys.readouterr().out
        assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
        assert "<U+001B>]52;c;" in out and "<U+202E>evil" in out
        assert len(out.strip().splitlines()) == 1, out  # the newline in the name forges no row
        run_line(agent, "")
        status = capsys.readouterr().out
        (line,) = [line for line in status.splitlines() if "<U+202E>evil" in line]
        assert line.startswith("thread:   ok<U+001B>]52;c;") and "\\nforged line (thread_" in line, status
        assert "\x1b" not in status and "\u202e" not in status and "forged line" not in status.replace("\\nforged", "")
    finally:
        await agent.close()


def test_a_headless_turn_header_keeps_a_hostile_thread_name_on_one_inert_line() -> None:
    from nbagent.notebook.text_render import TextTurn

    written: list[str] = []
    turn = TextTurn(lambda op: None, model_label="m", scripted=False, thread=HOSTILE_NAME, policy="never", out=written.append)
    turn.handle(Event(msg=TurnCompleted()))
    header = "".join(written).splitlines()[0]
    assert "thread ok<U+001B>]52;c;" in header and "\\nforged line · policy" in header, written
    assert not any(line.startswith("forged line") for line in "".join(written).splitlines())


def test_a_failed_servers_stderr_shows_its_controls_inert_in_the_startup_widget() -> None:
    from nbagent.notebook.startup import StartupView

    view = StartupView(["evil"])
    tail = "boot\x1b]52;c;ZWNobyBwd24=\x07\x1b[2J\u202eevil\nforged"
    view.handle(Event(msg=McpStartupUpdate(server="evil", status="failed", error="exit 1 \u202e", stderr_tail=tail)))
    shown = view.status.value
    assert "\u202e" not in shown and "\x1b" not in shown and "\x07" not in shown
    assert "&lt;U+202E&gt;evil" in shown and "&lt;U+001B&gt;]52;c;" in shown  # shown, as HTML text


async def test_nbagent_threads_at_a_shell_prints_a_hostile_name_inert(home: Path) -> None:
    async with Session(model=_replay(home, {"text": "hi"}), thread_name=HOSTILE_NAME) as session:
        await session.run("hello\x1b[2J there")
    proc = nbagent("threads", home=home / "home")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\u202e" not in proc.stdout and "\x07" not in proc.stdout
    assert "<U+001B>]52;c;" in proc.stdout and "<U+001B>[2J" in proc.stdout
    assert len(proc.stdout.strip().splitlines()) == 1, proc.stdout  # the newline in the name forges no row
