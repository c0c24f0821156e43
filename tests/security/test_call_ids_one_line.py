"""A tool call's id is the model's output: one holding newlines must not print a line that reads
as nbagent's own (``[turn completed]``, a finished call) in the text front end, in ``%agent``'s
status and answers, or in the progress an MCP client is sent. Against a real session, a real MCP
server and the replay model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from nbagent.core.session import Session
from nbagent.notebook.agent import KernelAgent
from nbagent.notebook.commands import run_line
from nbagent.notebook.text_render import TextTurn
from nbagent.server.forward import Forwarder
from tests.mcp.conftest import server_cfg
from tests.waiting import until

FORGED = "[turn completed]"
CALL_ID = f"call_1\n{FORGED}\n✔ all checks passed\u2028"
SHOWN = "call_1\\n[turn completed]\\n✔ all checks passed<U+2028>"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    for name in ("NBAGENT_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _model(home: Path, tool: str, **arguments: Any) -> str:
    path = home / "replay.json"
    path.write_text(json.dumps({"responses": [
        {"tool_calls": [{"name": tool, "arguments": arguments, "call_id": CALL_ID}]}, {"text": "ok"}]}))
    return f"replay:{path}"


def _forged_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(("[turn completed]", "✔ all checks"))]


async def test_the_text_front_end_and_agent_commands_print_a_call_id_as_one_line(
    home: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    printed: list[str] = []
    servers = {"feat": server_cfg("features.py", home / "record.jsonl")}
    agent = KernelAgent(shell=None, session_factory=lambda: Session(
        model=_model(home, "mcp__feat__delete_note", key="k"), policy="on-request", mcp_servers=servers,
        interactive=True))
    session = await agent.ready()
    turn = TextTurn(session.submit, model_label="replay", scripted=True, thread="t", policy="on-request",
                    out=printed.append)
    session.subscribe(turn.handle)
    try:
        run = asyncio.create_task(session.run("delete the note"))
        assert list(await until(lambda: session.snapshot().pending_approvals, "the approval to be asked", timeout=60)) == [CALL_ID]
        run_line(agent, "")  # %agent: the status lists what is pending
        run_line(agent, "approve")  # the only pending call needs no id
        await asyncio.wait_for(run, 30)
    finally:
        await agent.close()
    said = capsys.readouterr().out
    text = "".join(printed)
    assert f"pending approval {SHOWN}: " in said and f"{SHOWN}: approve" in said
    assert f"[{SHOWN}]" in text and f"%agent approve {SHOWN}" in text and f"approval {SHOWN}: approve" in text
    assert not _forged_lines(said) and _forged_lines(text) == [FORGED], (said, text)  # only the real end


async def test_an_mcp_clients_progress_names_a_call_id_on_one_line(home: Path) -> None:
    sent: list[str] = []

    async def progress(step: float, total: float | None, message: str | None) -> None:
        sent.append(message or "")

    async def log(level: str, data: Any) -> None:
        pass

    servers = {"feat": server_cfg("features.py", home / "record.jsonl")}
    async with Session(model=_model(home, "mcp__feat__work", steps=2), policy="full-auto", mcp_servers=servers) as session:
        forward = Forwarder(progress, log)
        session.subscribe(lambda e: asyncio.get_running_loop().create_task(forward(e)))
        await asyncio.wait_for(session.run("work"), 60)
        await until(lambda: any(m.startswith(SHOWN) for m in sent), "the call's progress to be sent", timeout=10)
    assert all("\n" not in m and "\u2028" not in m for m in sent), sent
