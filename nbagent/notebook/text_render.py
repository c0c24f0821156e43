"""The same turn as plain text, for front ends without widgets (IPython terminal, nbclient).

Approvals and questions print their ids and the commands that answer them
(``%agent approve|deny CALL_ID``); under ``--wait`` in a terminal they are asked at a stdin
prompt. A headless turn bounds its own asks (``UserTurn.ask_timeout_sec``): one nobody answers is
settled by timeout, so the run never hangs.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from typing import Unpack

from nbagent.core.context import describe as describe_compaction
from nbagent.kit.diffview import changes_text
from nbagent.kit.turn import (
    Card,
    CardChanged,
    Compacted,
    Ended,
    Header,
    LoginChanged,
    MessageChanged,
    Question,
    QuestionChanged,
    ReasoningChanged,
    ServerChanged,
    TurnModel,
    Warned,
    change_lines,
    denial_line,
    header_text,
    usage_text,
)
from nbagent.notebook.cellctx import CellContext
from nbagent.notebook.text_ask import ask_approval, ask_elicitation
from nbagent.protocol import (
    ApprovalDecision,
    ApprovalRequested,
    ElicitationRequested,
    ElicitationResolved,
    ElicitationResponse,
    Event,
    Op,
)
from nbagent.protocol.ops import Submit
from nbagent.textsafe import describe_for_display, link_notes, one_line

Ask = Callable[[str], str]


class TextTurn:
    def __init__(
        self,
        submit: Submit,
        *,
        note: str | None = None,
        prompt: Ask | None = None,
        out: Callable[[str], None] | None = None,
        stream_deltas: bool = True,
        **header: Unpack[Header],
    ) -> None:
        self._submit = submit
        self._prompt = prompt
        self._cell = CellContext()
        self._out = out
        self._stream_deltas = stream_deltas
        """Headless runs print each message whole: nobody watches it grow."""
        self._open_text = False
        self.done = False
        self.model = TurnModel()
        self.lines: list[str] = []
        self._note = note
        self._header: str | None = None
        self.set_header(**header)

    def set_header(self, **header: Unpack[Header]) -> None:
        """What the turn runs with. Printed with the first thing the turn shows, so the line
        names the session's real model and thread once it is open (not a placeholder)."""
        if not self.lines:
            self._header = f"[nbagent] {' · '.join(header_text(header).parts())}\n"

    def handle_queued(self) -> None:
        """Nothing to print yet: the header prints with the turn's first event, once it runs."""

    def _print_header(self) -> None:
        if self._header is None:
            return
        header, self._header = self._header, None
        self._write(header)
        if self._note:
            self._write(f"[nbagent] {self._note}\n")

    def _write(self, text: str, flush: bool = True) -> None:
        text = describe_for_display(text)  # server and model text: no escape sequence reaches the terminal
        self.lines.append(text)
        if self._out is not None:
            self._out(text)
            return
        self._cell.run(lambda: (sys.stdout.write(text), sys.stdout.flush() if flush else None))

    def _line(self, text: str) -> None:
        if self._open_text:
            self._write("\n")
            self._open_text = False
        self._write(text + "\n")

    def handle(self, envelope: Event) -> None:
        self._print_header()
        match self.model.apply(envelope):
            case MessageChanged(message=message, delta=delta):
                if not message.done:
                    if self._stream_deltas:
                        self._write(delta, flush=False)
                        self._open_text = True
                    return
                if not self._open_text and message.text:
                    self._write(message.text)
                if self._open_text or message.text:
                    self._write("\n")
                self._open_text = False
            case ReasoningChanged(reasoning=reasoning) if reasoning.done:
                self._line(f"(reasoning: {len(reasoning.text)} characters, hidden)")
            case CardChanged(card=card, part=part, delta=delta):
                self._on_card(card, part, delta)
            case QuestionChanged(question=q) if q.ask is not None and not q.answered:
                self._on_elicitation(q.ask)
            case QuestionChanged(question=Question(answer=ElicitationResolved() as a) as q):
                said = f" — {a.message}" if a.message else ""
                self._line(f"  question {q.request_id}: {a.action} ({a.by}){said}")
            case Warned(message=message):
                self._line(f"⚠ {message}")
            case Compacted(compaction=compaction):
                self._line(describe_compaction(compaction))
            case LoginChanged(login=login) if login.done:
                self._line(f"✓ signed in to MCP server {login.server}")
            case LoginChanged(login=login):
                self._line(f"🔑 MCP server {login.server} asks you to sign in; open this link yourself: {login.url}")
            case ServerChanged(server=server) if server.status == "failed":
                self._line(f"⚠ MCP server {server.name} failed: {server.error}")
            case Ended(ending=ending):
                if self.model.usage is not None:  # once, for the whole turn
                    self._line(usage_text(self.model.usage, self.model.thread_usage))
                if ending.status == "failed":
                    self._line(f"error ({ending.code}): {ending.reason}")
                elif ending.status == "completed":
                    self._line("[turn completed]")
                else:
                    self._line(f"[turn aborted: {ending.reason}]")
                self.done = True

    def _on_card(self, card: Card, part: str, delta: str = "") -> None:
        if part == "begun":
            args = json.dumps(card.arguments, ensure_ascii=False) if card.arguments is not None else card.raw_arguments
            self._line(f"→ {card.label} {args}  [{one_line(card.call_id)}]")
        elif part == "progress" and card.progress is not None:
            step = card.progress
            total = f"/{step.total:g}" if step.total else ""
            self._line(f"  … {step.progress:g}{total} {step.message or ''}".rstrip())
        elif part == "output" and delta:
            self._write(delta)
        elif part == "changes" and card.applied:
            for line in change_lines(card):
                self._line(f"  {line}")
        elif part == "sandbox_denied":
            self._line(f"  ⊘ {denial_line(card)}")
        elif part == "ended" and card.end is not None:
            e = card.end
            mark = "✖" if e.is_error or e.status != "completed" else "✔"
            output = e.output if len(e.output) <= 500 else e.output[:500] + "…"
            self._line(f"{mark} {e.tool} {e.status} in {e.duration_ms / 1000:.2f} s: {output}")
        elif part == "asked" and card.approval is not None and card.approval.ask is not None:
            self._on_approval(card.approval.ask)
        elif part == "decided" and card.approval is not None and card.approval.answer is not None:
            a = card.approval.answer
            self._line(f"  approval {one_line(card.call_id)}: {a.decision} ({a.by}){' — ' + a.message if a.message else ''}")

    def _settled(self, key: str | None) -> bool:
        """An ask already answered (here, at a prompt, or elsewhere): nothing more to submit."""
        card, question = self.model.cards.get(key or ""), self.model.questions.get(key or "")
        return bool(card and card.approval and card.approval.decided) or bool(question and question.answered)

    def _on_approval(self, e: ApprovalRequested) -> None:
        flags = []
        if e.annotations is not None:
            flags = [n for n, v in (("read-only", e.annotations.read_only_hint), ("destructive", e.annotations.destructive_hint), ("open-world", e.annotations.open_world_hint)) if v]
        self._line(
            f"? approval needed for {self.model.card(e.call_id).label} (model name {e.tool})"
            f"{' [' + ', '.join(flags) + ']' if flags else ''}: {e.reason}\n"
            f"  arguments: {json.dumps(e.arguments, ensure_ascii=False)}\n"
            + (f"{changes_text(e.changes)}\n" if e.changes else "")
            + f"  answer: %agent approve {one_line(e.call_id)}   |   %agent deny {one_line(e.call_id)} [reason]"
        )
        if self._prompt is not None:
            asyncio.get_running_loop().call_soon(self._ask_approval, e)

    def _ask_approval(self, e: ApprovalRequested) -> None:
        assert self._prompt is not None
        if self.done or self._settled(e.call_id):
            return
        decision, message = ask_approval(self._prompt, e)
        self._submit_quietly(ApprovalDecision(call_id=e.call_id, decision=decision, message=message))  # type: ignore[arg-type]  # the answer's words map to a Decision

    def _ask_elicitation(self, e: ElicitationRequested) -> None:
        assert self._prompt is not None
        if self.done or self._settled(e.request_id):
            return
        action, content = ask_elicitation(self._prompt, self._line, e)
        self._submit_quietly(ElicitationResponse(request_id=e.request_id, action=action, content=content))  # type: ignore[arg-type]  # the answer's words map to an action

    def _on_elicitation(self, e: ElicitationRequested) -> None:
        where = ""
        if e.mode == "url" and e.url:  # where it goes on a line of its own, and why it may mislead
            where = f" — open {e.url} yourself" + "".join(f"\n  {note}" for note in link_notes(e.url))
        fields = ", ".join((e.requested_schema or {}).get("properties", {})) if e.mode == "form" else ""
        how = (
            ""
            if self._prompt is not None
            else f"\n  answer from Python: session.submit(ElicitationResponse(request_id={e.request_id!r}, action='accept', content={{...}}))"
        )
        self._line(f"? {e.server} asks: {e.message}{where}" + (f"\n  fields: {fields}" if fields else "") + how)
        if self._prompt is not None:
            asyncio.get_running_loop().call_soon(self._ask_elicitation, e)

    def _submit_quietly(self, op: Op) -> None:
        key = getattr(op, "call_id", None) or getattr(op, "request_id", None)
        if self.done or self._settled(key):
            return
        try:
            self._submit(op)
        except Exception:  # resolved meanwhile: nothing to do
            pass
