"""The live view of one turn in its cell's output, built from session events only.

One root ``VBox`` is displayed when the cell runs; everything after that is a change to widget
state (comm messages routed by widget id), so late events from the background task land in the
right cell whatever the kernel's current parent message is (DESIGN §9).
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as W

from nbagent.core.context import describe as describe_compaction
from nbagent.kit.labels import model_text, policy_text
from nbagent.notebook.approval import ApprovalPanel
from nbagent.notebook.bridge import get_bridge, running_cell_id
from nbagent.notebook.callbacks import guarded
from nbagent.notebook.elicitation import ElicitationForm
from nbagent.notebook.html import COLORS, badge, esc, muted, pre
from nbagent.notebook.login import LoginLinks
from nbagent.notebook.stream import MarkdownStream
from nbagent.notebook.throttle import DEFAULT_INTERVAL
from nbagent.notebook.toolcard import ToolCard
from nbagent.protocol import (
    DECISIONS_THAT_RUN,
    AgentMessage,
    AgentMessageDelta,
    ApprovalRequested,
    ApprovalResolved,
    ContextCompacted,
    ElicitationRequested,
    ElicitationResolved,
    Event,
    Interrupt,
    McpLoginCompleted,
    McpLoginRequired,
    McpStartupUpdate,
    Progress,
    Reasoning,
    ReasoningDelta,
    TokenUsage,
    ToolCallBegin,
    ToolCallEnd,
    TurnAborted,
    TurnCompleted,
    TurnFailed,
    TurnStarted,
    WarningEvent,
)
from nbagent.protocol.ops import Submit


class WidgetTurn:
    """Widgets for one turn; ``handle(event)`` is fed every event of that turn, in order."""

    def __init__(
        self,
        submit: Submit,
        *,
        stop: Callable[[], object] | None = None,
        model_label: str,
        scripted: bool,
        thread: str,
        policy: str,
        context: bool = False,
        note: str | None = None,
        interval: float = DEFAULT_INTERVAL,
        render_text: bool = True,
    ) -> None:
        self._submit = submit
        self._stop = stop or (lambda: submit(Interrupt(reason="stopped from the turn's Stop button")))
        self._interval = interval
        self._render_text = render_text
        self.done = False
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
        self.set_header(model_label=model_label, scripted=scripted, thread=thread, policy=policy, context=context)
        self.stop_button = W.Button(description="Stop", icon="stop", button_style="danger", layout=W.Layout(width="auto"))
        self.status = W.HTML(muted("waiting for the session…"), layout=W.Layout(flex="1 1 20em", min_width="0"))
        self.stop_button.on_click(guarded("Stop", lambda html: setattr(self.status, "value", html))(lambda _b: self.stop()))
        self.body = W.VBox([])
        self.footer = W.HTML()
        # Wraps, so a long label never pushes the Stop button out of sight.
        top = W.HBox([self.header, self.stop_button, self.status], layout=W.Layout(flex_flow="row wrap"))
        self.widget = W.VBox([top, self.body, self.footer])

    def set_header(self, *, model_label: str, scripted: bool, thread: str, policy: str, context: bool = False) -> None:
        """Model (a scripted model is labelled so), thread and policy; full-auto is loud."""
        self.header.value = (
            f"{badge(model_text(model_label, scripted), 'info')}{badge('thread ' + thread, 'muted')}"
            f"{badge('policy ' + policy_text(policy), 'error' if policy == 'full-auto' else 'muted')}"
            + (badge("notebook context on", "muted") if context else "")
            + (f"<div>{muted(self._note)}</div>" if self._note else "")
        )

    def handle_queued(self) -> None:
        self.status.value = muted("queued behind the running turn…")

    # -- actions ---------------------------------------------------------------------------

    def stop(self) -> None:
        if not self.done:
            self._stop()
            self.status.value = muted("stopping…")

    def _add(self, widget: W.Widget) -> None:
        self.body.children = (*self.body.children, widget)

    # -- events ----------------------------------------------------------------------------

    def handle(self, event: Event) -> None:
        if event.turn_id and self.cell_id and event.turn_id not in self._anchored:
            self._anchored.add(event.turn_id)  # every turn shown here (one per outside call under serve)
            get_bridge().anchor_turn(event.turn_id, self.cell_id)
        method = getattr(self, f"_on_{event.msg.type}", None)
        if method is not None:
            method(event.msg)

    def _on_turn_started(self, event: TurnStarted) -> None:
        self.status.value = f"<span style='color:{COLORS['info']}'>running…</span>"

    def _stream(self, item_id: str) -> MarkdownStream:
        stream = self.streams.get(item_id)
        if stream is None:
            stream = self.streams[item_id] = MarkdownStream(self._interval)
            self._add(stream.widget)
        return stream

    def _on_agent_message_delta(self, event: AgentMessageDelta) -> None:
        if self._render_text:
            self._stream(event.item_id).append(event.delta)

    def _on_agent_message(self, event: AgentMessage) -> None:
        if self._render_text:
            self._stream(event.item_id).set(event.text)

    def _reasoning(self, item_id: str) -> MarkdownStream:
        stream = self.reasoning.get(item_id)
        if stream is None:
            stream = self.reasoning[item_id] = MarkdownStream(self._interval)
            box = W.Accordion(children=[stream.widget], titles=("reasoning",), selected_index=None)
            self._add(box)
        return stream

    def _on_reasoning_delta(self, event: ReasoningDelta) -> None:
        self._reasoning(event.item_id).append(event.delta)

    def _on_reasoning(self, event: Reasoning) -> None:
        self._reasoning(event.item_id).set(event.text)

    def _on_tool_call_begin(self, event: ToolCallBegin) -> None:
        for stream in self.streams.values():
            stream.flush()
        card = self.cards[event.call_id] = ToolCard(event)
        self._add(card.widget)

    def _on_progress(self, event: Progress) -> None:
        card = self.cards.get(event.call_id)
        if card is not None:
            card.on_progress(event)

    def _on_tool_call_end(self, event: ToolCallEnd) -> None:
        card = self.cards.get(event.call_id)
        if card is not None:
            card.on_end(event)

    def _on_approval_requested(self, event: ApprovalRequested) -> None:
        """One card per call: the panel goes inside the call's card (a call begins before it
        asks), standing on its own only for a call this view never saw begin."""
        panel = self.approvals[event.call_id] = ApprovalPanel(event, self._submit)
        card = self.cards.get(event.call_id)
        if card is None:
            self._add(panel.widget)
            return
        card.attach(panel.embed(), replaces_arguments=True)
        card.set_status("awaiting")

    def _on_approval_resolved(self, event: ApprovalResolved) -> None:
        panel = self.approvals.get(event.call_id)
        if panel is not None:
            panel.on_resolved(event)
        card = self.cards.get(event.call_id)
        if card is not None and card.status == "awaiting":
            card.decided(event.decision in DECISIONS_THAT_RUN, event.arguments)

    def _on_elicitation_requested(self, event: ElicitationRequested) -> None:
        form = self.forms[event.request_id] = ElicitationForm(event, self._submit)
        card = self.cards.get(event.call_id or "")
        if card is None:
            self._add(form.widget)
        else:
            card.attach(form.widget)

    def _on_elicitation_resolved(self, event: ElicitationResolved) -> None:
        form = self.forms.get(event.request_id)
        if form is None and event.message:  # a question no one could be asked: say so, as for a call
            self._add(W.HTML(f"<div style='color:{COLORS['warn']}'>⊘ {esc(event.message)}</div>"))
        if form is not None:
            form.on_resolved(event)
            card = self.cards.get(form.event.call_id or "")
            if card is not None:
                card.answered(event.action, event.by)

    def _on_mcp_startup_update(self, event: McpStartupUpdate) -> None:
        if event.status == "failed":
            self._add(W.HTML(f"<div style='color:{COLORS['error']}'>MCP server {esc(event.server)} failed: {esc(event.error or '')}</div>"))

    def _on_mcp_login_required(self, event: McpLoginRequired) -> None:
        """A 401 mid-turn: the link to sign in again, in the turn that is waiting for it."""
        if self.logins is None:
            self.logins = LoginLinks()
            self._add(self.logins.widget)
        self.logins.handle(event)

    def _on_mcp_login_completed(self, event: McpLoginCompleted) -> None:
        if self.logins is not None:
            self.logins.handle(event)

    def _on_token_usage(self, event: TokenUsage) -> None:
        cached = f", {event.cached_input_tokens} cached" if event.cached_input_tokens else ""
        reasoning = f", {event.reasoning_tokens} reasoning" if event.reasoning_tokens else ""
        self.footer.value = muted(
            f"tokens: {event.input_tokens} in{cached}, {event.output_tokens} out{reasoning} ({event.total_tokens} total)"
        )

    def _on_context_compacted(self, event: ContextCompacted) -> None:
        self._add(W.HTML(muted(describe_compaction(event))))

    def _on_warning(self, event: WarningEvent) -> None:
        self._add(W.HTML(f"<div style='color:{COLORS['warn']}'>⚠ {esc(event.message)}</div>"))

    def _on_turn_failed(self, event: TurnFailed) -> None:
        # The message is shown once, here; the status line only says that the turn failed.
        self._add(W.HTML(f"<div style='color:{COLORS['error']}'><b>error ({esc(event.code)})</b>{pre(event.message)}</div>"))
        self.finish("failed")

    def _on_turn_completed(self, event: TurnCompleted) -> None:
        self.finish("completed")

    def _on_turn_aborted(self, event: TurnAborted) -> None:
        self.finish("aborted", event.reason)

    def finish(self, status: str, reason: str | None = None) -> None:
        """Final flush of every stream; the Stop button goes away."""
        for stream in (*self.streams.values(), *self.reasoning.values()):
            stream.flush()
        self.done = True
        self.stop_button.layout.display = "none"
        color = {"completed": "ok", "aborted": "warn"}.get(status, "error")
        # A reason can be long: it wraps beside the pill instead of running off the cell's edge.
        why = f"<span style='color:{COLORS[color]};overflow-wrap:anywhere'>{esc(reason)}</span>" if reason else ""
        self.status.value = f"<div style='white-space:normal'>{badge(status, color)}{why}</div>"
