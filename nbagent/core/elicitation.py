"""Questions an MCP server asks the user (DESIGN §6): each is one pending ask with its answer
checked against the server's schema, recorded however it ends.

What a person submits is exactly what the server is sent and what the thread records as theirs:
a schema's defaults are what a front end pre-fills for the person to keep or clear, never added
to an answer afterwards. A question whose form no answer could satisfy is declined before it is
shown; a front end that still cannot show one says so (``cannot_show``) and the question ends at
once as unanswered. A front end that must know whether its answer was taken (the notebook form
stays open and says why) submits inside ``refusals()``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from nbagent.core.pending import PendingAsks, Resolution
from nbagent.mcp.checks import elicitation_answer_problems, form_schema
from nbagent.protocol import (
    AnsweredBy,
    ElicitationRecord,
    ElicitationRequested,
    ElicitationResolved,
    ElicitationResponse,
    Policy,
    WarningEvent,
)
from nbagent.protocol.elicitation import ElicitationSchemaError, ElicitOutcome, elicitation_fields
from nbagent.textsafe import describe_for_display, is_link_url

NOT_WAITING = "this question is no longer waiting for an answer"
"""Why an answer is turned down when its question has already ended (answered elsewhere, timed out)."""

_told: ContextVar[list[str] | None] = ContextVar("nbagent_elicitation_refusals", default=None)
_asking: dict[str, ElicitationDesk] = {}
"""The desk each question waiting for an answer belongs to, by request id (unique per process)."""


@contextmanager
def refusals() -> Iterator[list[str]]:
    """Why the session turned down each answer submitted inside this block (empty: all taken).

    ``Session.submit`` hands an answer over and returns; a refusal is otherwise only a warning
    event. A front end that submits here learns of it before it says anything was sent."""
    told: list[str] = []
    token = _told.set(told)
    try:
        yield told
    finally:
        _told.reset(token)


def cannot_show(request_id: str, why: str) -> bool:
    """A front end could not show the question waiting under ``request_id`` (building its form
    failed): end it now as unanswered, saying why, instead of letting it wait out its timeout.
    ``False`` when no question waits under that id."""
    desk = _asking.get(request_id)
    return desk is not None and desk.cannot_show(request_id, why)


class ElicitationDesk(PendingAsks[ElicitationRequested, ElicitOutcome]):
    noun = "elicitation with request id"

    async def ask(
        self,
        request: ElicitationRequested,
        *,
        turn_id: str | None,
        policy: Policy,
        interactive: bool,
        timeout: float | None,
    ) -> ElicitOutcome:
        if request.mode == "url" and not is_link_url(request.url):
            # Never shown as a link (a javascript: or data: URL runs in the page): declined, and
            # the user is told what was refused.
            shown = describe_for_display(repr(request.url or ""))[:200]
            message = f"MCP server {request.server!r} asked to open {shown}, which is not an https/http link: declined"
            self._bus.emit(WarningEvent(message=message), turn_id=turn_id)
            return self.resolve(request, Resolution(ElicitOutcome(action="decline"), "policy"), turn_id).answer
        if request.mode == "form":
            try:
                elicitation_fields(form_schema(request))
            except ElicitationSchemaError as exc:
                # No front end can show it, or nothing typed into it could be sent: say so now
                # rather than show a form that waits out its timeout.
                message = (
                    f"MCP server {request.server!r} asked a question whose form cannot be shown "
                    f"({describe_for_display(str(exc))[:500]}): it was declined without asking."
                )
                return self.resolve(
                    request, Resolution(ElicitOutcome(action="decline"), "policy", message), turn_id
                ).answer
        _asking[request.request_id] = self
        try:
            resolution = await self.await_answer(
                request.request_id, request, turn_id=turn_id, policy=policy, interactive=interactive, timeout=timeout
            )
        finally:
            _asking.pop(request.request_id, None)
        return resolution.answer

    def answer(self, op: ElicitationResponse) -> bool:
        """Apply a front end's answer exactly as given; ``False`` (with a warning, and told to
        ``refusals()``) when it does not fit or its question no longer waits."""
        request = self.waiting(op.request_id)
        if request is None:
            return _tell(NOT_WAITING)
        content = op.content if op.action == "accept" else None
        if op.action == "accept" and request.mode == "form":
            content = content or {}
            if problems := elicitation_answer_problems(request, content):
                why = f"answer to {request.server}'s question refused: " + "; ".join(problems)
                _tell(why)
                return self.refuse(op.request_id, why)
        return self.user_answered(op.request_id, ElicitOutcome(action=op.action, content=content))

    def cannot_show(self, request_id: str, why: str) -> bool:
        request = self._waiting[request_id].request if request_id in self._waiting else None
        server = request.server if request is not None else "?"
        return self.unanswered(
            request_id, f"MCP server {server!r} asked a question its form could not show ({why}): no answer was given."
        )

    def fallback(self, request: ElicitationRequested, by: AnsweredBy) -> ElicitOutcome:
        return ElicitOutcome(action="decline" if by == "policy" else "cancel")

    def declined(self, request: ElicitationRequested, why: str) -> str:
        return f"MCP server {request.server!r} asked a question and {why}: it was declined without asking."

    def records(
        self, request: ElicitationRequested, resolution: Resolution[ElicitOutcome], turn_id: str | None
    ) -> tuple[ElicitationRecord, ElicitationResolved]:
        outcome, by, message = resolution.answer, resolution.by, resolution.message
        assert by != "remembered", "a server's question is never answered from memory"
        action, content = outcome.action, outcome.content
        record = ElicitationRecord(
            turn_id=turn_id,
            request_id=request.request_id,
            server=request.server,
            action=action,
            by=by,
            content=content,
            message=message,
        )
        resolved = ElicitationResolved(
            request_id=request.request_id, action=action, by=by, content=content, message=message
        )
        return record, resolved


def _tell(why: str) -> bool:
    """Tell the front end submitting inside ``refusals()`` why its answer was not taken; ``False``."""
    told = _told.get()
    if told is not None:
        told.append(why)
    return False
