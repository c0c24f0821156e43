"""The approval panel: everything needed to decide on one tool call, and the five decisions.

The arguments are editable JSON, checked against the tool's input schema before an approval is
sent, so what runs is exactly what the user saw and accepted. A call that changes a file or a
notebook cell shows the change as a diff against what is there now; an edit of its arguments
diffs again (``preview``: the front end's way to ask the tool's source). After a decision (here, through
``%agent approve``, a timeout or an interrupt) the panel collapses to a one-line record and its
buttons stop working.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import ipywidgets as W

from nbagent.calls.arguments import TOO_DEEP
from nbagent.core.approval import edit_problems
from nbagent.notebook.buttons import answer_button, on_answer
from nbagent.notebook.callbacks import guarded
from nbagent.notebook.diffview import changes_html
from nbagent.notebook.html import COLORS, badge, esc, muted, pre
from nbagent.protocol import (
    DECISIONS_THAT_RUN,
    ApprovalDecision,
    ApprovalRequested,
    ApprovalResolved,
    Decision,
    PatchChange,
)
from nbagent.protocol.ops import Submit
from nbagent.textsafe import describe_for_display, visible_json

DECISION_TEXT: dict[str, str] = {
    "approve": "approved once",
    "approve_session": "approved for this session",
    "always": "always approved (saved to config)",
    "deny": "denied",
    "abort": "turn aborted",
}
Preview = Callable[[str, dict[str, Any]], Awaitable[list[PatchChange]]]
"""What a call of the named tool with these arguments would change, read now."""
BY_TEXT = {"user": "by you", "code": "by notebook code", "policy": "by policy", "remembered": "remembered", "timeout": "timed out", "interrupt": "interrupted"}


def annotation_badges(event: ApprovalRequested) -> str:
    a = event.annotations
    if a is None:
        return badge("no annotations", "warn")
    out = []
    if a.read_only_hint:
        out.append(badge("read-only", "ok"))
    if a.destructive_hint:
        out.append(badge("destructive", "error"))
    elif a.destructive_hint is None and not a.read_only_hint:
        out.append(badge("may modify", "warn"))
    if a.open_world_hint:
        out.append(badge("open-world", "warn"))
    if a.idempotent_hint:
        out.append(badge("idempotent", "muted"))
    return "".join(out)


class ApprovalPanel:
    def __init__(self, event: ApprovalRequested, submit: Submit, preview: Preview | None = None) -> None:
        self.event = event
        self._submit = submit
        self._preview = preview
        self._diffing: asyncio.Task[None] | None = None
        self._diffed = ""
        """The arguments text the shown diff is of."""
        self.resolved: ApprovalResolved | None = None
        self.sent: Decision | None = None
        title = describe_for_display(event.title or event.raw_tool or event.tool)  # names are server text
        raw = describe_for_display(event.raw_tool or event.tool)
        who = f"{esc(event.server)} · <code>{esc(raw)}</code>" if event.server else ""
        changed = (
            f"<div style='color:{COLORS['warn']}'>Definition changed since you last approved: {esc(event.changed)}</div>"
            if event.changed
            else ""
        )
        self.identity = W.HTML(
            f"<div><b style='color:{COLORS['warn']}'>Approval needed</b> &nbsp;<b>{esc(title)}</b> "
            f"{who} <span style='color:{COLORS['muted']}'>(model calls it <code>{esc(event.tool)}</code>)"
            "</span></div>"
        )
        """Which call this is: left out when the panel sits in the call's card, which says it."""
        self.info = W.HTML(
            f"<div>{annotation_badges(event)}</div>"
            + (f"<div>{muted('why: ' + event.reason)}</div>" if event.reason else "")
            + changed
            + (f"<details><summary>{muted('description')}</summary>{pre(event.description)}</details>" if event.description else "")
        )
        shown = visible_json(event.arguments)  # parses back to the same arguments
        self.arguments = W.Textarea(
            value=shown,
            description="arguments",
            layout=W.Layout(width="95%", height=f"{min(16, 2 + shown.count(chr(10)))}em"),
        )
        self.diff = W.HTML(changes_html(event.changes), layout=W.Layout(display="" if event.changes else "none"))
        """The call's changes as a diff against what is there now, coloured, long ones folded."""
        self._diffed = self.arguments.value
        if preview is not None:  # a patch that did not apply at first may once edited
            self.arguments.observe(lambda _: self._rediff(), names="value")
        self.problems = W.HTML()
        self.reason = W.Text(
            placeholder="reason told to the model (optional)",
            description="deny reason",
            style={"description_width": "initial"},
            layout=W.Layout(width="60%"),
        )
        self.buttons: dict[Decision, W.Button] = {
            "approve": answer_button("Approve", "success", "check", "run this call once"),
            "approve_session": answer_button("Approve for session", "info", "clock-o", "run it and do not ask again this session"),
            "always": answer_button("Always", "info", "save", "approve and save to the config file"),
            "deny": answer_button("Deny", "warning", "ban", "do not run it; the model is told, with the reason below"),
            "abort": answer_button("Abort turn", "danger", "stop", "do not run it, and end the turn"),
        }
        on_click = guarded("this decision", self._show_problem)
        for decision, button in self.buttons.items():
            on_answer(button, on_click(lambda d=decision: self.decide(d)))
        self.record = W.HTML(layout=W.Layout(display="none"))
        self.body = W.VBox(
            [self.identity, self.info, self.diff, self.arguments, self.problems, W.HBox(list(self.buttons.values()), layout=W.Layout(flex_flow="row wrap")), self.reason]
        )
        self.embedded = False
        self.widget = W.VBox(
            [self.body, self.record],
            layout=W.Layout(border=f"2px solid {COLORS['warn']}", padding="4px 8px", margin="4px 0"),
        )

    def embed(self) -> W.Widget:
        """The panel as part of its call's card: no second title, no second frame; after the
        decision one line says what was decided."""
        self.embedded = True
        self.identity.layout.display = "none"
        self.widget.layout.border = "none"
        self.widget.layout.padding = "0"
        return self.widget

    @property
    def call_id(self) -> str:
        return self.event.call_id

    def _show_problem(self, html: str) -> None:
        self.problems.value = html

    def _rediff(self) -> None:
        """Diff the edited arguments again: one reading at a time, then the latest text."""
        if self._diffing is not None and not self._diffing.done():
            return  # the running one looks again when it ends
        self._diffing = asyncio.ensure_future(self._diff_latest())

    async def _diff_latest(self) -> None:
        assert self._preview is not None
        while self._diffed != (text := self.arguments.value) and self.resolved is None and self.sent is None:
            self._diffed = text
            try:
                arguments = json.loads(text)
            except (json.JSONDecodeError, RecursionError):
                continue  # not JSON yet: the approval says why if it is sent so
            if not isinstance(arguments, dict):
                continue
            try:
                html = changes_html(await self._preview(self.event.tool, arguments))
            except Exception as exc:  # a change that cannot be read: say why, keep the panel
                html = f"<div style='color:{COLORS['warn']}'>the edited call's change cannot be shown: {esc(exc)}</div>"
            if self.arguments.value == text and (html or self.diff.layout.display == ""):  # none for a tool without changes
                self.diff.value = html or muted("no change")
                self.diff.layout.display = ""

    def edited_arguments(self) -> tuple[dict[str, Any] | None, list[str]]:
        try:
            value = json.loads(self.arguments.value)
        except json.JSONDecodeError as exc:
            return None, [f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"]
        except RecursionError:  # deeper than the parser recurses: far past the limit
            return None, [TOO_DEEP]
        problems = edit_problems(self.event, value)
        return (value if not problems else None), problems

    def decide(self, decision: Decision) -> bool:
        """Send one decision (button click). Refuses invalid edited arguments for approvals."""
        if self.resolved is not None or self.sent is not None:
            return False
        arguments: dict[str, Any] | None = None
        message: str | None = None
        if decision in DECISIONS_THAT_RUN:
            arguments, problems = self.edited_arguments()
            if problems:
                self.problems.value = "".join(
                    f"<div style='color:{COLORS['error']}'>{esc(p)}</div>" for p in problems
                )
                return False
            if arguments == self.event.arguments:
                arguments = None  # unchanged: nothing to override
        elif decision == "deny":
            message = self.reason.value.strip() or None
        self.problems.value = ""
        try:
            self._submit(ApprovalDecision(call_id=self.call_id, decision=decision, message=message, arguments=arguments))
        except Exception as exc:  # e.g. already resolved elsewhere a moment ago
            self.problems.value = f"<div style='color:{COLORS['error']}'>{esc(exc)}</div>"
            return False
        self.sent = decision
        self._collapse(decision, "by you", message, arguments)
        return True

    def on_resolved(self, event: ApprovalResolved) -> None:
        """The authoritative outcome, wherever it was decided."""
        self.resolved = event
        self._collapse(event.decision, BY_TEXT.get(event.by, event.by), event.message, event.arguments)

    def _collapse(self, decision: str, by: str, message: str | None, arguments: dict[str, Any] | None) -> None:
        for button in self.buttons.values():
            button.disabled = True
        self.arguments.disabled = True
        self.reason.disabled = True
        ok = decision in DECISIONS_THAT_RUN
        color = COLORS["ok"] if ok else COLORS["error"] if decision == "abort" else COLORS["warn"]
        title = describe_for_display(self.event.title or self.event.raw_tool or self.event.tool)
        edited = " with edited arguments" if arguments and arguments != self.event.arguments else ""
        said = f" — “{esc(message)}”" if message else ""
        named = "" if self.embedded else f"<b>{esc(title)}</b> "
        self.record.value = (
            f"<span style='color:{color}'>{'✔' if ok else '⊘'} {named}"
            f"{esc(DECISION_TEXT.get(decision, decision))} {esc(by)}{edited}{said}</span>"
        )
        self.record.layout.display = ""
        self.body.layout.display = "none"
        if not self.embedded:
            self.widget.layout.border = f"1px solid {color}"

