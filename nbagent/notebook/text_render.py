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

from nbagent.core.context import describe as describe_compaction
from nbagent.kit.labels import model_text, policy_text
from nbagent.notebook.cellctx import CellContext
from nbagent.notebook.text_ask import ask_approval, ask_elicitation
from nbagent.notebook.toolcard import tool_label
from nbagent.protocol import (
    AgentMessage,
    AgentMessageDelta,
    ApprovalDecision,
    ApprovalRequested,
    ApprovalResolved,
    ContextCompacted,
    ElicitationRequested,
    ElicitationResolved,
    ElicitationResponse,
    Event,
    McpLoginCompleted,
    McpLoginRequired,
    McpStartupUpdate,
    Op,
    Progress,
    Reasoning,
    TokenUsage,
    ToolCallBegin,
    ToolCallEnd,
    TurnAborted,
    TurnCompleted,
    TurnFailed,
    WarningEvent,
)
from nbagent.protocol.ops import Submit
from nbagent.textsafe import describe_for_display, link_notes, one_line

Ask = Callable[[str], str]


class TextTurn:
    def __init__(
        self,
        submit: Submit,
        *,
        model_label: str,
        scripted: bool,
        thread: str,
        policy: str,
        context: bool = False,
        note: str | None = None,
        prompt: Ask | None = None,
        out: Callable[[str], None] | None = None,
        stream_deltas: bool = True,
    ) -> None:
        self._submit = submit
        self._prompt = prompt
        self._cell = CellContext()
        self._out = out
        self._stream_deltas = stream_deltas
        """Headless runs print each message whole: nobody watches it grow."""
        self._open_text = False
        self._reasoning = False
        self.done = False
        self._resolved: set[str] = set()
        self.lines: list[str] = []
        self._note = note
        self._header: str | None = None
        self.set_header(model_label=model_label, scripted=scripted, thread=thread, policy=policy, context=context)

    def set_header(self, *, model_label: str, scripted: bool, thread: str, policy: str, context: bool = False) -> None:
        """What the turn runs with. Printed with the first thing the turn shows, so the line
        names the session's real model and thread once it is open (not a placeholder)."""
        if not self.lines:
            seen = " · notebook context on" if context else ""
            self._header = f"[nbagent] {model_text(model_label, scripted)} · thread {one_line(thread)} · policy {policy_text(policy)}{seen}\n"

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
        event = envelope.msg
        match event:
            case AgentMessageDelta():
                if self._stream_deltas:
                    self._write(event.delta, flush=False)
                    self._open_text = True
            case AgentMessage():
                if not self._open_text and event.text:
                    self._write(event.text)
                if self._open_text or event.text:
                    self._write("\n")
                self._open_text = False
            case Reasoning():
                self._line(f"(reasoning: {len(event.text)} characters, hidden)")
            case ToolCallBegin() as e:
                args = json.dumps(e.arguments, ensure_ascii=False) if e.arguments is not None else e.raw_arguments
                self._line(f"→ {tool_label(e.tool, e.server, e.raw_tool, e.title)} {args}  [{one_line(e.call_id)}]")
            case Progress():
                total = f"/{event.total:g}" if event.total else ""
                self._line(f"  … {event.progress:g}{total} {event.message or ''}".rstrip())
            case ToolCallEnd() as e:
                mark = "✖" if e.is_error or e.status != "completed" else "✔"
                output = e.output if len(e.output) <= 500 else e.output[:500] + "…"
                self._line(f"{mark} {e.tool} {e.status} in {e.duration_ms / 1000:.2f} s: {output}")
            case ApprovalRequested():
                self._on_approval(event)
            case ApprovalResolved() as e:
                self._resolved.add(e.call_id)
                self._line(f"  approval {one_line(e.call_id)}: {e.decision} ({e.by}){' — ' + e.message if e.message else ''}")
            case ElicitationRequested():
                self._on_elicitation(event)
            case ElicitationResolved():
                self._resolved.add(event.request_id)
                said = f" — {event.message}" if event.message else ""
                self._line(f"  question {event.request_id}: {event.action} ({event.by}){said}")
            case TokenUsage():
                self._line(f"tokens: {event.input_tokens} in, {event.output_tokens} out")
            case WarningEvent():
                self._line(f"⚠ {event.message}")
            case ContextCompacted():
                self._line(describe_compaction(event))
            case McpLoginRequired():
                self._line(f"🔑 MCP server {event.server} asks you to sign in; open this link yourself: {event.url}")
            case McpLoginCompleted():
                self._line(f"✓ signed in to MCP server {event.server}")
            case McpStartupUpdate(status="failed"):
                self._line(f"⚠ MCP server {event.server} failed: {event.error}")
            case TurnFailed():
                self._line(f"error ({event.code}): {event.message}")
                self.done = True
            case TurnCompleted():
                self._line("[turn completed]")
                self.done = True
            case TurnAborted():
                self._line(f"[turn aborted: {event.reason}]")
                self.done = True

    def _on_approval(self, e: ApprovalRequested) -> None:
        flags = []
        if e.annotations is not None:
            flags = [n for n, v in (("read-only", e.annotations.read_only_hint), ("destructive", e.annotations.destructive_hint), ("open-world", e.annotations.open_world_hint)) if v]
        self._line(
            f"? approval needed for {tool_label(e.tool, e.server, e.raw_tool, e.title)} (model name {e.tool})"
            f"{' [' + ', '.join(flags) + ']' if flags else ''}: {e.reason}\n"
            f"  arguments: {json.dumps(e.arguments, ensure_ascii=False)}\n"
            f"  answer: %agent approve {one_line(e.call_id)}   |   %agent deny {one_line(e.call_id)} [reason]"
        )
        if self._prompt is not None:
            asyncio.get_running_loop().call_soon(self._ask_approval, e)

    def _ask_approval(self, e: ApprovalRequested) -> None:
        assert self._prompt is not None
        if self.done or e.call_id in self._resolved:
            return
        decision, message = ask_approval(self._prompt, e)
        self._submit_quietly(ApprovalDecision(call_id=e.call_id, decision=decision, message=message))  # type: ignore[arg-type]  # the answer's words map to a Decision

    def _ask_elicitation(self, e: ElicitationRequested) -> None:
        assert self._prompt is not None
        if self.done or e.request_id in self._resolved:
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
        if self.done or key in self._resolved:
            return
        try:
            self._submit(op)
        except Exception:  # resolved meanwhile: nothing to do
            pass
