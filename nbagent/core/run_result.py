"""``RunResult``: what ``Session.run`` returns, read from the turn's own events.

A script gets what every front end saw: the turn's last message and how it ended are what its
``agent_message`` and terminal events said, so no second account of a turn can drift from them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from nbagent.protocol import AgentMessage, EventMsg, Item, TurnAborted, TurnCompleted, TurnFailed


@dataclass
class RunResult:
    """The turn's final text and the items it added."""

    text: str
    thread_id: str
    turn_id: str
    status: Literal["completed", "aborted", "failed"]
    items: list[Item] = field(default_factory=list)
    error: str | None = None
    error_code: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "completed"


class TurnEvents:
    """What one awaited turn said, gathered as its events are made."""

    def __init__(self) -> None:
        self.text = ""
        self.end: TurnCompleted | TurnAborted | TurnFailed | None = None

    def add(self, msg: EventMsg) -> None:
        if isinstance(msg, AgentMessage) and msg.text:
            self.text = msg.text
        elif isinstance(msg, (TurnCompleted, TurnAborted, TurnFailed)):
            self.end = msg

    def result(self, thread_id: str, turn_id: str, items: list[Item]) -> RunResult:
        end = self.end
        if isinstance(end, TurnCompleted):
            return RunResult(end.last_message or self.text, thread_id, turn_id, "completed", items)
        if isinstance(end, TurnFailed):
            return RunResult(self.text, thread_id, turn_id, "failed", items, end.message, end.code)
        reason = end.reason if end is not None else "the turn ended without saying how"
        return RunResult(self.text, thread_id, turn_id, "aborted", items, reason)
