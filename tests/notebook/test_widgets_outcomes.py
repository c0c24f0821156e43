"""What a person reads after each choice, with a real Session, the demo MCP server over stdio and
the quickstart's own scripted model: events feed a real WidgetTurn (in-process widgets).

The scripted text must match what was clicked, a tool error shows the server's reason, and a
declined question reads "you declined", not the SDK's resolver message.
"""

from __future__ import annotations

import sys
from importlib.resources import files
from pathlib import Path

import mcp_types
import pytest

from nbagent import Session
from nbagent.config import McpServerConfig
from nbagent.mcp.results import from_call_result
from nbagent.notebook.render import WidgetTurn
from nbagent.protocol import ApprovalDecision, ElicitationResponse, Event

pytestmark = pytest.mark.timeout(120)
REPO = Path(__file__).resolve().parents[2]
QUICKSTART = files("nbagent.examples") / "quickstart.json"
DETAILS = {"title": "Baseline run", "owner_email": "you@example.com", "runs": 3, "optimizer": "adam", "tags": ["nlp"]}


def demo_server(tmp_path: Path) -> dict[str, McpServerConfig]:
    return {"demo": McpServerConfig(
        command=sys.executable,
        args=["-m", "nbagent.examples.demo_server", "--dir", str(tmp_path / "notes")],
        env={"PYTHONPATH": str(REPO)}, trusted=True,
        tools={"log_experiment": {"approval_mode": "approve"}},
    )}


class Clicker:
    """Answers every ask the way a person would click, and shows the turn in a WidgetTurn."""

    def __init__(self, session: Session, approval: str, answer: str) -> None:
        self.session, self.approval, self.answer = session, approval, answer
        self.view = WidgetTurn(session.submit, model_label="scripted", scripted=True, thread="t", policy="on-request")
        session.subscribe(self.on_event)

    def on_event(self, event: Event) -> None:
        self.view.handle(event)
        if event.msg.type == "approval_requested":
            self.session.submit(ApprovalDecision(call_id=event.msg.call_id, decision=self.approval))  # type: ignore[arg-type]
        elif event.msg.type == "elicitation_requested":
            content = DETAILS if self.answer == "accept" else None
            self.session.submit(ElicitationResponse(request_id=event.msg.request_id, action=self.answer, content=content))  # type: ignore[arg-type]


async def walkthrough(tmp_path: Path, approval: str, answer: str) -> tuple[list[str], Clicker]:
    async with Session(model=f"replay:{QUICKSTART}", policy="on-request", cwd=tmp_path, home=tmp_path / "home",
                       mcp_servers=demo_server(tmp_path), interactive=True) as session:
        clicker = Clicker(session, approval, answer)
        replies = []
        for prompt in ("What notes do I have?", "Write a note called hello.", "Log an experiment.", "Read it back."):
            replies.append((await session.run(prompt)).text)  # type: ignore[union-attr]
        return replies, clicker


def card_text(clicker: Clicker, raw_tool: str) -> str:
    [card] = [c for c in clicker.view.cards.values() if c.call.raw_tool == raw_tool]
    return card.result.value


@pytest.mark.parametrize(("approval", "answer"), [("approve", "accept"), ("deny", "decline"), ("approve", "cancel")])
async def test_the_quickstart_says_what_happened(tmp_path: Path, approval: str, answer: str) -> None:
    replies, clicker = await walkthrough(tmp_path, approval, answer)
    wrote, logged, read = replies[1], replies[2], replies[3]
    if approval == "approve":
        assert "You approved the write and the note `hello` was written" in wrote
        assert (tmp_path / "notes" / "hello.md").is_file()
    else:
        assert "You denied the write, so the note `hello` was not written" in wrote
        assert not (tmp_path / "notes" / "hello.md").exists()
    if answer == "accept":
        assert "stored the experiment note with exactly the details" in logged
        assert "read back" in read and "owner_email: you@example.com" in card_text(clicker, "read_note")
    else:
        assert ("You declined" if answer == "decline" else "was cancelled") in logged and "stored" not in logged
        assert "There is no experiment note to read" in read
        assert not (tmp_path / "notes" / "experiment-baseline.md").exists()
        # the person reads why, in their words, and the server's reason for the failed read
        said = "you declined the server&#x27;s question" if answer == "decline" else "you cancelled the server&#x27;s question"
        assert said in card_text(clicker, "log_experiment")
        assert "no note named &#x27;experiment-baseline&#x27;" in card_text(clicker, "read_note")


async def test_the_model_is_told_the_reason_too(tmp_path: Path) -> None:
    _, clicker = await walkthrough(tmp_path, "approve", "decline")
    told = {i.call_id: i.output for i in clicker.session._thread.items if i.type == "function_call_output"}
    log_call = next(c for c in clicker.view.cards.values() if c.call.raw_tool == "log_experiment").call_id
    assert told[log_call].startswith("The user declined the server's question, so log_experiment did not run.")
    assert "Resolver for parameter" in told[log_call]  # the server's own words are kept after it


def test_a_bare_sdk_error_says_the_server_gave_no_reason() -> None:
    result = from_call_result(mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text="Error executing tool read_note")], is_error=True))
    [block] = result.content
    assert block.text.startswith("read_note failed and the server gave no reason") and "server's log" in block.text
    kept = from_call_result(mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text="Error executing tool read_note: no note named 'x'")], is_error=True))
    assert kept.content[0].text == "Error executing tool read_note: no note named 'x'"


async def test_a_question_no_one_can_answer_shows_no_form_and_says_why(tmp_path: Path) -> None:
    """Under policy "never" no one may answer: as for a call, nothing is shown to click, and the
    turn says which question was declined and why."""
    async with Session(model=f"replay:{QUICKSTART}", policy="never", cwd=tmp_path, home=tmp_path / "home",
                       mcp_servers=demo_server(tmp_path), interactive=True) as session:
        clicker = Clicker(session, "approve", "accept")
        for prompt in ("What notes do I have?", "Write a note called hello.", "Log an experiment.", "Read it back."):
            await session.run(prompt)
    shown = " ".join(getattr(w, "value", "") for w in clicker.view.body.children)
    assert clicker.view.forms == {} and clicker.view.approvals == {}
    assert "MCP server &#x27;demo&#x27; asked a question and policy &#x27;never&#x27;: it was declined" in shown
    assert not (tmp_path / "notes" / "experiment-baseline.md").exists()
