"""Questions an MCP server asks the user (DESIGN §6): each is one pending ask with its answer
checked against the server's schema, recorded however it ends.

What a person submits is exactly what the server is sent and what the thread records as theirs:
a schema's defaults are what a front end pre-fills for the person to keep or clear, never added
to an answer afterwards. A question whose form no answer could satisfy is declined before it is
shown; a front end that still cannot show one says so (the ``AskUnanswered`` op) and the
question ends at once as unanswered. An answer the session turns down is a warning event, and
``Session.submit`` raises ``OpRejected`` saying why (the notebook form stays open and shows it).
"""

from __future__ import annotations

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
        resolution = await self.await_answer(
            request.request_id, request, turn_id=turn_id, policy=policy, interactive=interactive, timeout=timeout
        )
        return resolution.answer

    def answer(self, op: ElicitationResponse) -> str | None:
        """Apply a front end's answer exactly as given; why not (with a warning) when it does not
        fit or its question no longer waits."""
        request = self.waiting(op.request_id)
        if request is None:
            return NOT_WAITING
        content = op.content if op.action == "accept" else None
        if op.action == "accept" and request.mode == "form":
            content = content or {}
            if problems := elicitation_answer_problems(request, content):
                why = f"answer to {request.server}'s question refused: " + "; ".join(problems)
                return self.refuse(op.request_id, why)
        return self.user_answered(op.request_id, ElicitOutcome(action=op.action, content=content), by=op.by)

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

