"""The answer to an op that only reads (``Inspect``, ``ListThreads``), for a front end's
synchronous command: the session answers such an op before ``submit`` returns."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nbagent.protocol import ErrorEvent, Event, EventMsg, Inspect, ListThreads

if TYPE_CHECKING:
    from nbagent.core.session import Session


def read_now(session: Session, op: Inspect | ListThreads) -> EventMsg:
    """The event ``op`` is answered with; its error event's text raised as a ``RuntimeError``."""
    answers: list[EventMsg] = []

    def hear(event: Event) -> None:
        if not answers and event.turn_id is None:
            if isinstance(event.msg, ErrorEvent) and event.msg.code == op.type or event.msg.type in _ANSWERS[op.type]:
                answers.append(event.msg)

    unsubscribe = session.subscribe(hear)
    try:
        session.submit(op)
    finally:
        unsubscribe()
    if not answers:
        raise RuntimeError(f"{op.type}: the session did not answer")
    if isinstance(answers[0], ErrorEvent):
        raise RuntimeError(answers[0].message)
    return answers[0]


_ANSWERS = {"inspect": ("inspect_result",), "list_threads": ("thread_list",)}
