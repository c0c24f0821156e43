"""A plain IPython terminal (no kernel, no widgets) through real pipes: ``%load_ext nbagent`` and a
``%%agent --wait`` turn whose tool call needs approval, answered at the stdin prompt. The text
renderer's output is what the person reads; the demo server's record is what ran."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.notebook.harness import REPO, call, demo_config, executions, script

pytestmark = pytest.mark.timeout(120)

PROMPT = "[y]es / [s]ession / [n]o / [a]bort: "


class Terminal:
    def __init__(self, cwd: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO), "NBAGENT_HOME": str(cwd / "home"),
               "IPYTHONDIR": str(cwd / "ipython"), "TERM": "dumb"}
        env.pop("NBAGENT_FRONTEND", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "IPython", "--simple-prompt", "--no-banner", "--colors=NoColor"],
            cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, bufsize=0,
        )  # fmt: skip
        self.text = ""
        self._chunks: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while chunk := self.proc.stdout.read(1):
            self._chunks.put(chunk)

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text)
        self.proc.stdin.flush()

    def expect(self, needle: str, timeout: float = 30, after: int = 0) -> int:
        """Wait until ``needle`` appears (past offset ``after``); returns the offset after it."""
        deadline = time.monotonic() + timeout
        while (at := self.text.find(needle, after)) < 0:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{needle!r} not shown within {timeout}s; the terminal shows:\n{self.text}")
            try:
                self.text += self._chunks.get(timeout=min(left, 0.1))
            except queue.Empty:
                pass
        return at + len(needle)

    def close(self) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise


@pytest.fixture
def terminal(tmp_path):
    made: list[Terminal] = []

    def make(*responses: dict, extra: str = "") -> tuple[Terminal, Path]:
        record = tmp_path / "record.jsonl"
        demo_config(tmp_path, script(tmp_path / "replay.json", *responses), record, extra=extra)
        term = Terminal(tmp_path)
        made.append(term)
        term.send("%load_ext nbagent\n")
        return term, record

    yield make
    for term in made:
        if term.proc.poll() is None:
            term.proc.kill()
            term.proc.wait(10)


WRITE = call("mcp__demo__write_note", name="hello", text="hi there")


def test_approval_answered_at_the_prompt_runs_the_tool_once(terminal):
    term, record = terminal(WRITE, {"text": "Written."})
    term.send("%%agent --wait\nWrite a hello note\n\n\n")  # the simple prompt ends a cell magic with a blank line
    at = term.expect(PROMPT)
    shown = term.text
    assert "[nbagent] scripted replay: replay.json · thread thread_" in shown and "policy on-request" in shown
    assert "→ Write a note — demo · write_note" in shown and "? approval needed" in shown
    assert "[destructive]" in shown and '"name": "hello"' in shown
    assert executions(record) == []  # nothing ran before the answer
    term.send("y\n")
    end = term.expect("[turn completed]", after=at)
    out = term.text[at:end]
    assert "approve (user)" in out and "✔ mcp__demo__write_note completed" in out and "wrote hello.md" in out
    assert "Written." in out and "Traceback" not in term.text
    assert [(e["tool"], e["arguments"]) for e in executions(record)] == [("write_note", {"name": "hello", "text": "hi there"})]
    term.send("%agent history\n")
    end = term.expect("function_call_output", after=end)
    term.send("%agent new scratch\n")  # needs the event loop, which a terminal runs only on demand
    term.expect("new thread ", after=end, timeout=15)
    assert term.close() == 0


def test_closed_input_at_the_prompt_denies_instead_of_hanging(terminal):
    term, record = terminal(WRITE, {"text": "Not written."})
    term.send("%%agent --wait\nWrite a hello note\n\n\n")
    at = term.expect(PROMPT)
    assert term.proc.stdin is not None
    term.proc.stdin.close()  # nobody will ever answer
    end = term.expect("[turn completed]", after=at)
    assert "deny (user) — no answer: the terminal's input is closed" in term.text[at:end]
    assert "Not written." in term.text[at:end]
    assert executions(record) == []
    assert term.close() == 0


def test_elicitation_form_answered_field_by_field(terminal):
    extra = '[mcp_servers.demo.tools.log_experiment]\napproval_mode = "approve"\n'
    term, record = terminal(call("mcp__demo__log_experiment", name="e1"), {"text": "Logged."}, extra=extra)
    term.send("%%agent --wait\nLog experiment e1\n\n\n")
    at = term.expect("answer? [y]es / [d]ecline / [c]ancel: ")
    assert "? demo asks: Details for experiment 'e1'?" in term.text
    answers = ["y", "Baseline run", "not-an-email", "ada@example.org", "7", "0.125", "y", "sgd", "2,3", "2025-03-04"]
    term.send("".join(a + "\n" for a in answers))
    end = term.expect("[turn completed]", after=at)
    out = term.text[at:end]
    assert "question" in out and "accept (user)" in out
    (run,) = executions(record)
    assert run["content"] == {
        "title": "Baseline run", "owner_email": "ada@example.org", "runs": 7, "learning_rate": 0.125,
        "public": True, "optimizer": "sgd", "tags": ["nlp", "rl"], "start": "2025-03-04",
    }
    assert term.close() == 0
