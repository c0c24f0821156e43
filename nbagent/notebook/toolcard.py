"""A card per tool call: who is called, with what, how far along, and what came back.

Shows the server, the raw tool name and its title (the model-visible name too), the arguments
pretty-printed, a status line, a progress bar fed by ``progress`` events, a command's output as it
comes (``exec_command_output_delta``), the duration, and the result collapsed (images shown inline); failures are visibly marked.
"""

from __future__ import annotations

import re
from typing import Any

import ipywidgets as W

from nbagent.kit.turn import Card, Step, change_lines, denial_line
from nbagent.notebook.html import COLORS, badge, esc, muted, pre, pretty_json
from nbagent.notebook.throttle import Coalescer
from nbagent.protocol import ImageBlock, ResourceBlock, TextBlock, ToolCallEnd
from nbagent.textsafe import describe_for_display

STATUS_STYLE = {
    "running": ("…", "info", "running"),
    "awaiting": ("?", "warn", "awaiting approval"),
    "completed": ("✔", "ok", "done"),
    "failed": ("✖", "error", "failed"),
    "denied": ("⊘", "warn", "denied"),
    "aborted": ("■", "muted", "aborted"),
}
_IMAGE_MIME = re.compile(r"^image/(png|jpeg|gif|webp|svg\+xml)$")
RESULT_PREVIEW_CHARS = 20_000
OUTPUT_TAIL_CHARS = 4_000
"""A running command's output shows its last this many characters (the result has it all)."""
_BORDER = "1px solid #d0d7de"


class ToolCard:
    """The drawing of one call's ``Card`` (``nbagent.kit.turn``)."""

    def __init__(self, call: Card) -> None:
        self.call_id = call.call_id
        self.call = call
        self.status = "running"
        self.duration_ms: float | None = None
        self.header = W.HTML()
        args = call.arguments if call.arguments is not None else call.raw_arguments
        note = "" if call.arguments is not None else " (malformed JSON, as the model sent it)"
        self.arguments = W.HTML(
            f"<details><summary>{muted('arguments' + note)}</summary>"
            f"{pre(args if isinstance(args, str) else pretty_json(args))}</details>"
        )
        self.progress = W.FloatProgress(value=0, min=0, max=1, layout=W.Layout(display="none", width="60%"))
        self.progress_label = W.HTML(layout=W.Layout(display="none"))
        self.output = W.HTML(layout=W.Layout(display="none"))
        self.changes = W.HTML(layout=W.Layout(display="none"))
        self.denied = W.HTML(layout=W.Layout(display="none"))
        self.result = W.HTML()
        self.outcome_note: str | None = None
        """Why the call ended as it did, when the user's answer decided it."""
        self.asks = W.VBox([])
        """The call's approval panel and the server's questions, inside the card."""
        self._last_progress: Step | None = None
        self._progress_coalescer = Coalescer(self._push_progress)
        self._output_coalescer = Coalescer(self._push_output)
        self.widget = W.VBox(
            [self.header, self.arguments, self.asks, W.HBox([self.progress, self.progress_label]), self.output, self.changes, self.denied, self.result],
            layout=W.Layout(border=_BORDER, padding="2px 8px", margin="4px 0"),
        )
        self._render_header()

    def attach(self, widget: W.Widget, *, replaces_arguments: bool = False) -> None:
        """Show an ask inside this card; an approval panel's argument editor stands in for the
        read-only arguments until the decision."""
        self.asks.children = (*self.asks.children, widget)
        if replaces_arguments:
            self.arguments.layout.display = "none"

    def answered(self, action: str, by: str) -> None:
        """A question the server asked during this call was not answered: say so in the result,
        in the person's words rather than the SDK's."""
        if action != "accept":
            who = "you" if by == "user" else {"code": "notebook code", "policy": "the policy (nobody to ask)", "timeout": "the timeout", "interrupt": "the interrupt"}.get(by, by)
            verb = "declined" if action == "decline" else "cancelled"
            self.outcome_note = f"{who} {verb} the server's question" if who == "you" else f"the server's question was {verb} by {who}"

    def decided(self, arguments: dict[str, Any] | None) -> None:
        """After the approval: the arguments that run (the user's edit, if any) are shown again,
        and the call's status (running or denied) as the turn model decided it."""
        if arguments is not None and arguments != self.call.arguments:
            self.arguments.value = (
                f"<details><summary>{muted('arguments (edited by you before approval)')}</summary>"
                f"{pre(pretty_json(arguments))}</details>"
            )
        self.arguments.layout.display = ""
        self.set_status(self.call.status)

    def set_status(self, status: str) -> None:
        self.status = status
        # While it waits for the user the whole card is framed as an ask, not just a panel in it.
        self.widget.layout.border = f"2px solid {COLORS['warn']}" if status == "awaiting" else _BORDER
        self._render_header()

    def on_progress(self, step: Step) -> None:
        self._last_progress = step
        self._progress_coalescer.touch()

    def _push_progress(self) -> None:
        event = self._last_progress
        if event is None:
            return
        total = event.total if event.total and event.total > 0 else None
        self.progress.max = total or max(event.progress, 1.0)
        self.progress.value = min(event.progress, self.progress.max)
        self.progress.bar_style = "info"
        self.progress.layout.display = "" if total else "none"
        shown = f"{event.progress:g}/{total:g}" if total else f"{event.progress:g}"
        self.progress_label.value = muted(f"{shown} {event.message or ''}".strip())
        self.progress_label.layout.display = ""

    def on_output(self) -> None:
        """The command wrote more (``call.output``): redrawn at most once per interval."""
        self._output_coalescer.touch()

    def _push_output(self) -> None:
        if self.call.output is None:
            return
        text = self.call.output.text
        cut = muted(f"[… {len(text) - OUTPUT_TAIL_CHARS} earlier characters]") if len(text) > OUTPUT_TAIL_CHARS else ""
        self.output.value = cut + pre(text[-OUTPUT_TAIL_CHARS:])
        self.output.layout.display = ""

    def on_changes(self) -> None:
        """The files the call's patch changes (``call.changes``), one line each with the lines it
        adds and removes; marked when they were not written."""
        note = muted(" (not written)") if self.call.applied is False else ""
        self.changes.value = pre("\n".join(change_lines(self.call))) + note
        self.changes.layout.display = ""

    def on_denied(self) -> None:
        """What the sandbox refused the command, in the card above its result."""
        self.denied.value = f"<div style='color:{COLORS['warn']}'>⊘ {esc(denial_line(self.call))}</div>"
        self.denied.layout.display = ""

    def on_end(self, end: ToolCallEnd) -> None:
        self._progress_coalescer.flush()
        self._output_coalescer.flush()
        self.duration_ms = end.duration_ms
        if self._last_progress is not None and end.status == "completed":
            self.progress.value = self.progress.max
            self.progress.bar_style = "success"
        self.result.value = self._result_html(end)
        self.set_status(self.call.status)

    def _render_header(self) -> None:
        icon, color, label = STATUS_STYLE.get(self.status, ("·", "muted", self.status))
        b = self.call
        shown = describe_for_display  # names come from a server: nothing in them may hide
        title = esc(shown(b.title or b.raw_tool or b.tool))
        raw = f"{esc(shown(b.server))} · <code>{esc(shown(b.raw_tool or b.tool))}</code>" if b.server else f"<code>{esc(b.tool)}</code>"
        duration = f" · {self.duration_ms / 1000:.2f} s" if self.duration_ms is not None else ""
        self.header.value = (
            f'<span style="color:{COLORS[color]};font-weight:bold">{icon}</span> <b>{title}</b> '
            f"<span style='color:{COLORS['muted']}'>{raw} (as <code>{esc(b.tool)}</code>)</span> "
            f"{badge(label, color)}{muted(duration)}"
        )

    def _result_html(self, end: ToolCallEnd) -> str:
        parts: list[str] = []
        for block in end.content:
            if isinstance(block, TextBlock):
                parts.append(pre(block.text[:RESULT_PREVIEW_CHARS]))
            elif isinstance(block, ImageBlock) and _IMAGE_MIME.match(block.mime_type):
                parts.append(f'<img src="data:{block.mime_type};base64,{esc(block.data)}" style="max-width:100%">')
            elif isinstance(block, ImageBlock):
                parts.append(muted(f"[image of type {block.mime_type} not shown]"))
            elif isinstance(block, ResourceBlock):
                parts.append(pre(f"{block.uri}\n{block.text or ''}"[:RESULT_PREVIEW_CHARS]))
        if end.structured is not None:
            parts.append(pre(pretty_json(end.structured)))
        if not parts:
            parts.append(pre(end.output[:RESULT_PREVIEW_CHARS]))
        failed = end.is_error or end.status != "completed"
        summary = "error" if end.is_error else ("result" if end.status == "completed" else end.status)
        color = COLORS["error"] if end.is_error else COLORS["muted"]
        opened = " open" if end.is_error else ""
        if self.outcome_note and end.is_error:
            parts.insert(0, f"<div><b>{esc(self.outcome_note)}</b>, so it did not run.</div>")
        return (
            f"<details{opened}><summary style='color:{color}'>{esc(summary)}"
            f"{' (what the model saw)' if failed else ''}</summary>{''.join(parts)}</details>"
        )
