"""Questions an MCP server asks the user (DESIGN §6): each is one pending ask with its answer
checked against the server's schema, recorded however it ends."""

from __future__ import annotations

from nbagent.core.pending import PendingAsks, Resolution
from nbagent.mcp.checks import answer_problems
from nbagent.mcp.elicitation import apply_defaults
from nbagent.protocol import (
    AnsweredBy,
    ElicitationRecord,
    ElicitationRequested,
    ElicitationResolved,
    ElicitationResponse,
    Policy,
    WarningEvent,
)
from nbagent.protocol.elicitation import ElicitOutcome
from nbagent.textsafe import describe_for_display, is_link_url


class ElicitationDesk(PendingAsks[ElicitationRequested, ElicitOutcome]):
    noun = "elicitation with request id"

    async def ask(
        self, request: ElicitationRequested, *, turn_id: str | None, policy: Policy, interactive: bool, timeout: float
    ) -> ElicitOutcome:
        if request.mode == "url" and not is_link_url(request.url):
            # Never shown as a link (a javascript: or data: URL runs in the page): declined, and
            # the user is told what was refused.
            shown = describe_for_display(repr(request.url or ""))[:200]
            message = f"MCP server {request.server!r} asked to open {shown}, which is not an https/http link: declined"
            self._bus.emit(WarningEvent(message=message), turn_id=turn_id)
            return self.resolve(request, Resolution(ElicitOutcome(action="decline"), "policy"), turn_id).answer
        resolution = await self.await_answer(
            request.request_id, request, turn_id=turn_id, policy=policy, interactive=interactive, timeout=timeout
        )
        return resolution.answer

    def answer(self, op: ElicitationResponse) -> bool:
        """Apply a front end's answer; ``False`` (with a warning) when it does not fit or is late."""
        request = self.waiting(op.request_id)
        if request is None:
            return False
        content = op.content
        if op.action == "accept" and request.mode == "form":
            schema = request.requested_schema or {"type": "object", "properties": {}}
            content = apply_defaults(schema, op.content or {})
            if problems := answer_problems(schema, content):
                return self.refuse(
                    op.request_id, f"answer to {request.server}'s question refused: " + "; ".join(problems)
                )
        return self.deliver(
            op.request_id, ElicitOutcome(action=op.action, content=content if op.action == "accept" else None)
        )

    def fallback(self, request: ElicitationRequested, by: AnsweredBy) -> ElicitOutcome:
        return ElicitOutcome(action="decline" if by == "policy" else "cancel")

    def declined(self, request: ElicitationRequested, why: str) -> str:
        return f"MCP server {request.server!r} asked a question and {why}: it was declined without asking."

    def records(
        self, request: ElicitationRequested, resolution: Resolution[ElicitOutcome], turn_id: str | None
    ) -> tuple[ElicitationRecord, ElicitationResolved]:
        outcome, by, message = resolution.answer, resolution.by, resolution.message
        said = {"action": outcome.action, "by": by, "content": outcome.content, "message": message}
        return (
            ElicitationRecord(turn_id=turn_id, request_id=request.request_id, server=request.server, **said),
            ElicitationResolved(request_id=request.request_id, **said),
        )
