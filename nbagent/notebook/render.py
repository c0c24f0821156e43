"""The live view of one turn in its cell's output, built from session events only.

One root ``VBox`` is displayed when the cell runs; everything after that is a change to widget
state (comm messages routed by widget id), so late events from the background task land in the
right cell whatever the kernel's current parent message is (DESIGN §9).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Unpack

import ipywidgets as W

from nbagent.core.context import describe as describe_compaction
from nbagent.kit.turn import (
    Card,
    CardChanged,
    Compacted,
    Ended,
    Header,
    Login,
    LoginChanged,
    MessageChanged,
    Question,
    QuestionChanged,
    ReasoningChanged,
    ServerChanged,
    Started,
    Text,
    TurnModel,
    UsageChanged,
    Warned,
    header_text,
)
from nbagent.notebook.approval import ApprovalPanel, Preview
from nbagent.notebook.bridge import get_bridge, running_cell_id
from nbagent.notebook.callbacks import guarded
from nbagent.notebook.elicitation import ElicitationForm
from nbagent.notebook.html import COLORS, badge, esc, muted, pre
from nbagent.notebook.login import LoginLinks
from nbagent.notebook.stream import MarkdownStream
from nbagent.notebook.throttle import DEFAULT_INTERVAL
from nbagent.notebook.toolcard import ToolCard
from nbagent.protocol import ContextCompacted, Event, Interrupt
from nbagent.protocol.ops import Submit


class WidgetTurn:
    """Widgets for one turn; ``handle(event)`` is fed every event of that turn, in order."""

    def __init__(
        self,
        submit: Submit,
        *,
        stop: Callable[[], object] | None = None,
        undo: Callable[[Callable[[bool, str], None]], None] | None = None,
        note: str | None = None,
        interval: float = DEFAULT_INTERVAL,
        render_text: bool = True,
        preview: Preview | None = None,
        **header: Unpack[Header],
    ) -> None:
        self._submit = submit
        self._preview = preview
        """How an approval panel diffs edited arguments again (the kernel's own tools)."""
        self._stop = stop or (lambda: submit(Interrupt(reason="stopped from the turn's Stop button")))
        self._undo = undo
        """Undoes this turn, then reports (done, message); ``None``: no "Undo turn" button."""
        self._interval = interval
        self._render_text = render_text
        self.done = False
        self.model = TurnModel()
        self.streams: dict[str, MarkdownStream] = {}
        self.reasoning: dict[str, MarkdownStream] = {}
        self.cards: dict[str, ToolCard] = {}
        self.approvals: dict[str, ApprovalPanel] = {}
        self.forms: dict[str, ElicitationForm] = {}
        self.logins: LoginLinks | None = None
        self._note = note
        self.cell_id = running_cell_id()
        """The cell this view is displayed in (made in the cell's execution): the turn's cells are
        inserted below it."""
        self._anchored: set[str] = set()
        self.header = W.HTML()
        self.set_header(**header)
        self.stop_button = W.Button(description="Stop", icon="stop", button_style="danger", layout=W.Layout(width="auto"))
        self.status = W.HTML(muted("waiting for the session…"), layout=W.Layout(flex="1 1 20em", min_width="0"))
        self.stop_button.on_click(guarded("Stop", lambda html: setattr(self.status, "value", html))(lambda _b: self.stop()))
        self.undo_button = W.Button(description="Undo turn", icon="undo", layout=W.Layout(width="auto", display="none"),
                                    tooltip="put back the notebook cells and workspace files this turn changed")
        self.undo_button.on_click(guarded("Undo turn", lambda html: setattr(self.status, "value", html))(lambda _b: self.undo()))
        self.body = W.VBox([])
        self.usage = W.HTML()
        """The turn's tokens, in the header once a request reports them."""
        # Wraps, so a long label never pushes the Stop button out of sight.
        top = W.HBox([self.header, self.usage, self.stop_button, self.undo_button, self.status],
                    layout=W.Layout(flex_flow="row wrap"))
        self.widget = W.VBox([top, self.body])

    def set_header(self, **header: Unpack[Header]) -> None:
        """Model (a scripted model is labelled so), thread and policy; full-auto is loud."""
        text = header_text(header)
        self.header.value = (
            f"{badge(text.model, 'info')}{badge(text.thread, 'muted')}{badge(text.policy, 'error' if text.loud else 'muted')}"
            + (badge(text.context, "muted") if text.context else "")
            + (f"<div>{muted(self._note)}</div>" if self._note else "")
        )

    def handle_queued(self) -> None:
        self.status.value = muted("queued behind the running turn…")

    # -- actions ---------------------------------------------------------------------------

    def stop(self) -> None:
        if not self.done:
            self._stop()
            self.status.value = muted("stopping…")

    def undo(self) -> None:
        """The "Undo turn" button: the turn's files put back; the header says which, or why not."""
        if self._undo is None or self.undo_button.disabled:
            return
        self.undo_button.disabled = True
        self.status.value = muted("undoing…")

        def report(done: bool, message: str) -> None:
            color = "warn" if done else "error"
            said = f"<span style='overflow-wrap:anywhere'>{esc(message)}</span>"
            self.status.value = f"<div style='white-space:normal'>{badge('undone' if done else 'not undone', color)}{said}</div>"
            self.undo_button.disabled = done

        self._undo(report)

    def _add(self, widget: W.Widget) -> None:
        self.body.children = (*self.body.children, widget)

    # -- events ----------------------------------------------------------------------------

    def handle(self, event: Event) -> None:
        if event.turn_id and self.cell_id and event.turn_id not in self._anchored:
            self._anchored.add(event.turn_id)  # every turn shown here (one per outside call under serve)
            get_bridge().anchor_turn(event.turn_id, self.cell_id)
        match self.model.apply(event):
            case Started():
                self.status.value = f"<span style='color:{COLORS['info']}'>running…</span>"
            case MessageChanged(message=message, delta=delta) if self._render_text:
                self._show(self.streams, message, delta, self._stream)
            case ReasoningChanged(reasoning=reasoning, delta=delta):
                self._show(self.reasoning, reasoning, delta, self._reasoning_box)
            case CardChanged(card=card, part=part):
                self._on_card(card, part)
            case QuestionChanged(question=question):
                self._on_question(question)
            case ServerChanged(server=server) if server.status == "failed":
                self._add(W.HTML(f"<div style='color:{COLORS['error']}'>MCP server {esc(server.name)} failed: {esc(server.error or '')}</div>"))
            case LoginChanged(login=login):
                self._on_login(login)
            case UsageChanged() as usage:
                self.usage.value = badge(usage.text, "muted")
            case Compacted(compaction=compaction):
                self._on_compacted(compaction)
            case Warned(message=message):
                self._add(W.HTML(f"<div style='color:{COLORS['warn']}'>⚠ {esc(message)}</div>"))
            case Ended(ending=ending):
                if ending.status == "failed":  # the message is shown once, here; the status line only says that it failed
                    self._add(W.HTML(f"<div style='color:{COLORS['error']}'><b>error ({esc(ending.code or '')})</b>{pre(ending.reason)}</div>"))
                self.finish(ending.status, ending.reason if ending.status == "aborted" else None)

    def _show(self, streams: dict[str, MarkdownStream], text: Text, delta: str, make: Callable[[], MarkdownStream]) -> None:
        stream = streams.get(text.item_id)
        if stream is None:
            stream = streams[text.item_id] = make()
        if text.done:
            stream.set(text.text)
        else:
            stream.append(delta)

    def _stream(self) -> MarkdownStream:
        stream = MarkdownStream(self._interval)
        self._add(stream.widget)
        return stream

    def _reasoning_box(self) -> MarkdownStream:
        stream = MarkdownStream(self._interval)
        self._add(W.Accordion(children=[stream.widget], titles=("reasoning",), selected_index=None))
        return stream

    def _on_card(self, card: Card, part: str) -> None:
        shown = self.cards.get(card.call_id)
        if part == "begun":
            for stream in self.streams.values():
                stream.flush()
            self.cards[card.call_id] = shown = ToolCard(card)
            self._add(shown.widget)
        elif part == "progress" and shown is not None and card.progress is not None:
            shown.on_progress(card.progress)
        elif part == "output" and shown is not None:
            shown.on_output()
        elif part == "changes" and shown is not None:
            shown.on_changes()
        elif part == "sandbox_denied" and shown is not None:
            shown.on_denied()
        elif part == "ended" and shown is not None and card.end is not None:
            shown.on_end(card.end)
        elif part == "asked" and card.approval is not None and card.approval.ask is not None:
            # One card per call: the panel goes inside the call's card (a call begins before it
            # asks), standing on its own only for a call this view never saw begin.
            panel = self.approvals[card.call_id] = ApprovalPanel(card.approval.ask, self._submit, self._preview)
            if shown is None:
                self._add(panel.widget)
                return
            shown.attach(panel.embed(), replaces_arguments=True)
            shown.set_status(card.status)
        elif part == "decided" and card.approval is not None and card.approval.answer is not None:
            answer = card.approval.answer
            asked = self.approvals.get(card.call_id)
            if asked is not None:
                asked.on_resolved(answer)
            if shown is not None and shown.status == "awaiting":
                shown.decided(answer.arguments)

    def _on_question(self, question: Question) -> None:
        if question.answer is None:
            if question.ask is None:
                return
            form = self.forms[question.request_id] = ElicitationForm(question.ask, self._submit)
            shown = self.cards.get(question.call_id or "")
            if shown is None:
                self._add(form.widget)
            else:
                shown.attach(form.widget)
            return
        answer = question.answer
        asked = self.forms.get(question.request_id)
        if asked is None and answer.message:  # a question no one could be asked: say so, as for a call
            self._add(W.HTML(f"<div style='color:{COLORS['warn']}'>⊘ {esc(answer.message)}</div>"))
        if asked is not None:
            asked.on_resolved(answer)
            shown = self.cards.get(asked.event.call_id or "")
            if shown is not None:
                shown.answered(answer.action, answer.by)

    def _on_login(self, login: Login) -> None:
        """A 401 mid-turn: the link to sign in again, in the turn that is waiting for it."""
        if self.logins is None:
            if login.done:
                return
            self.logins = LoginLinks()
            self._add(self.logins.widget)
        self.logins.show(login)

    def _on_compacted(self, compaction: ContextCompacted) -> None:
        self._add(W.HTML(muted(describe_compaction(compaction))))

    def finish(self, status: str, reason: str | None = None) -> None:
        """Final flush of every stream; the Stop button goes away."""
        for stream in (*self.streams.values(), *self.reasoning.values()):
            stream.flush()
        self.done = True
        self.stop_button.layout.display = "none"
        if self._undo is not None:
            self.undo_button.layout.display = None
        color = {"completed": "ok", "aborted": "warn"}.get(status, "error")
        # A reason can be long: it wraps beside the pill instead of running off the cell's edge.
        why = f"<span style='color:{COLORS[color]};overflow-wrap:anywhere'>{esc(reason)}</span>" if reason else ""
        self.status.value = f"<div style='white-space:normal'>{badge(status, color)}{why}</div>"
