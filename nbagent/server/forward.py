"""Session events as MCP progress and log notifications for the caller of one tool call.

Text deltas are coalesced (one progress message per burst, not one per token) so a chatty
model cannot flood the client; every other event that tells the caller something becomes one
progress step, and the notable ones also a log message.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from nbagent.kit.turn import (
    Approval,
    Card,
    CardChanged,
    Change,
    Ended,
    Ending,
    Failed,
    MessageChanged,
    Question,
    QuestionChanged,
    ReasoningChanged,
    ServerChanged,
    ServerLogged,
    Started,
    Step,
    TurnModel,
    Warned,
    change_lines,
    denial_line,
)
from nbagent.protocol import (
    ApprovalRequested,
    ApprovalResolved,
    ElicitationRequested,
    ElicitationResolved,
    Event,
    ToolCallEnd,
)
from nbagent.textsafe import one_line

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
Log = Callable[[str, Any], Awaitable[None]]

LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
COALESCE_SECONDS = 0.25
MAX_MESSAGE = 300


def _clip(text: str, limit: int = MAX_MESSAGE) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(change: Change | None, kind: str) -> tuple[str | None, str | None, dict[str, Any] | None]:
    """``(progress message, log level, log data)`` for one change of the turn model, from an
    event of type ``kind`` (the log data names it); ``None`` parts are not sent."""
    match change:
        case Started(model=model, turn_id=turn_id):
            return "turn started", "info", {"event": kind, "turn_id": turn_id, "model": model}
        case CardChanged(card=card, part="begun"):
            where = f" ({card.server}/{card.raw_tool})" if card.server else ""
            return f"calling {card.tool}{where}", "info", {"event": kind, "call_id": card.call_id, "tool": card.tool,
                                                           "server": card.server, "arguments": card.arguments}
        case CardChanged(card=Card(end=ToolCallEnd() as end), part="ended"):
            return (f"{end.tool}: {end.status}", "info" if not end.is_error else "warning",
                    {"event": kind, "call_id": end.call_id, "tool": end.tool, "status": end.status, "output": _clip(end.output)})
        case CardChanged(card=Card(approval=Approval(ask=ApprovalRequested() as ask)), part="asked"):
            return f"approval needed for {ask.tool}", "notice", {"event": kind, "call_id": ask.call_id, "tool": ask.tool}
        case CardChanged(card=Card(approval=Approval(answer=ApprovalResolved() as answer)), part="decided"):
            return (f"approval {answer.decision} ({answer.by})", "info",
                    {"event": kind, "call_id": answer.call_id, "decision": answer.decision, "by": answer.by})
        case CardChanged(card=card, part="changes") if card.applied:
            return _clip(f"{one_line(card.call_id)}: " + "; ".join(change_lines(card))), None, None
        case CardChanged(card=card, part="sandbox_denied"):
            return (_clip(f"{one_line(card.call_id)}: {denial_line(card)}"), "warning",
                    {"event": kind, "call_id": card.call_id, "tool": card.tool, "denied": card.denied and card.denied.denied})
        case CardChanged(card=Card(progress=Step() as step) as card, part="progress"):
            total = f"/{step.total:g}" if step.total else ""
            return f"{one_line(card.call_id)}: {step.progress:g}{total}" + (f" {step.message}" if step.message else ""), None, None
        case CardChanged(card=card, part="output", delta=delta):  # the newest line: progress is coalesced
            return _clip(f"{one_line(card.call_id)}: {one_line(delta.rstrip().rsplit(chr(10), 1)[-1])}"), None, None
        case QuestionChanged(question=Question(answer=ElicitationResolved() as answer)):
            return f"question answered: {answer.action} ({answer.by})", "info", {"event": kind, "action": answer.action, "by": answer.by}
        case QuestionChanged(question=Question(ask=ElicitationRequested() as ask)):
            return f"{ask.server} asks a question", "notice", {"event": kind, "server": ask.server, "message": ask.message}
        case ReasoningChanged(reasoning=reasoning) if reasoning.done:
            return _clip("reasoning: " + reasoning.text), None, None
        case ServerLogged(server=server, level=level, data=data):
            return None, level if level in LEVELS else "info", {"event": kind, "server": server, "data": data}
        case ServerChanged(server=server):
            return f"MCP server {server.name}: {server.status}", "error" if server.status == "failed" else "info", {
                "event": kind, "server": server.name, "status": server.status, "error": server.error}
        case Warned(message=message):
            return None, "warning", {"event": kind, "message": message}
        case Failed(message=message, code=code) | Ended(ending=Ending(status="failed", reason=message, code=code)):
            return None, "error", {"event": kind, "code": code, "message": message}
        case Ended(ending=Ending(status="aborted", reason=reason)):
            return f"turn aborted: {reason}", "warning", {"event": kind, "reason": reason}
        case Ended():
            return "turn completed", "info", {"event": kind}
    return None, None, None


class Forwarder:
    """Turns the events of one round into notifications on that round's request. The events
    come redacted as the thread's rollout is, text by its stream (``Session.subscribe``): an inner
    server may hand back the secrets it was given, and the outer client is no more trusted with
    them than the disk."""

    def __init__(self, progress: Progress, log: Log, *, min_level: str = "info") -> None:
        self._progress = progress
        self._log = log
        self._min = LEVELS.index(min_level) if min_level in LEVELS else 1
        self.model = TurnModel()
        """The round's events folded: what each notification says comes from here."""
        self._step = 0
        self._pending = ""
        self._since = 0.0
        self.sent_progress = 0

    async def _send(self, message: str) -> None:
        self._step += 1
        self.sent_progress += 1
        try:
            await self._progress(float(self._step), None, message)
        except Exception:  # a client that went away must not break the turn
            pass

    async def flush(self) -> None:
        if self._pending:
            text, self._pending = self._pending, ""
            await self._send(_clip(text.strip() or text))

    async def __call__(self, event: Event) -> None:
        change = self.model.apply(event)
        match change:
            case MessageChanged(message=text, delta=delta) if not text.done:
                if not self._pending:
                    self._since = time.monotonic()
                self._pending += delta
                if time.monotonic() - self._since >= COALESCE_SECONDS or len(self._pending) >= MAX_MESSAGE:
                    await self.flush()
                return
            case ReasoningChanged(reasoning=reasoning) if not reasoning.done:
                return
        await self.flush()
        message, level, data = describe(change, event.msg.type)
        if message:
            await self._send(message)
        if level and data is not None and LEVELS.index(level) >= self._min:
            try:
                await self._log(level, data)
            except Exception:
                pass
