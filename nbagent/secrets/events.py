"""A session's events as the rollout would hold them, for whoever is shown them: every event
redacted once, text deltas by their stream, so a secret streamed in pieces is hidden too."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel

from nbagent.protocol import (
    TERMINAL_TYPES,
    AgentMessage,
    AgentMessageDelta,
    Event,
    Reasoning,
    ReasoningDelta,
    TurnAborted,
    TurnCompleted,
)
from nbagent.secrets.redactor import Redactor
from nbagent.secrets.stream import StreamRedactor

__all__ = ["DELTA_TYPES", "DeltaRedactor", "EventRedactor", "redacted"]

ModelT = TypeVar("ModelT", bound=BaseModel)

DELTA_TYPES = frozenset({"agent_message_delta", "reasoning_delta"})
"""Streamed fragments: a display shows them as they come, and the message that ends them
replaces their text, redacted."""


def redacted(value: ModelT, redactor: Redactor) -> ModelT:
    """``value`` (an event, a result for an outside caller) as the rollout would hold it, for
    whoever is shown it: a server may hand back the secrets it was given (in a result, a
    description, an error, its stderr) and the model may echo them. One scan of the JSON finds
    that nearly every value holds none; with no secret to hide there is nothing to scan for, so
    nothing is serialised (each event and each outside call's answer would be)."""
    if not redactor:
        return value
    raw = value.model_dump_json(by_alias=True)
    clean = redactor.text(raw)
    return value if clean == raw else type(value).model_validate_json(clean)


class DeltaRedactor:
    """The text deltas of an event stream, redacted per item by a ``StreamRedactor`` each (a
    message and a reasoning summary stream side by side); every other event is returned as it
    came, for the caller to redact whole.

    A delta gives what its stream releases (no event while all of it is held). The event that
    ends an item's stream (its ``agent_message`` or ``reasoning``, or its turn's end when the
    stream broke off) comes after one more delta of that item with the held tail, on the ending
    event's envelope, so the deltas still join to the whole text."""

    def __init__(self, redactor: Callable[[], Redactor]) -> None:
        self._redactor = redactor
        self._streams: dict[str, tuple[str | None, AgentMessageDelta | ReasoningDelta, StreamRedactor]] = {}
        """Item id -> its turn, its first delta (the type of the tail's) and its text."""

    def __call__(self, event: Event) -> list[Event]:
        msg = event.msg
        if isinstance(msg, (AgentMessageDelta, ReasoningDelta)):
            *_, text = self._streams.setdefault(msg.item_id, (event.turn_id, msg, StreamRedactor()))
            shown = text.feed(msg.delta, self._redactor())
            if shown == msg.delta:
                return [event]
            return [_with_delta(event, msg, shown)] if shown else []
        if isinstance(msg, (AgentMessage, Reasoning)):
            ended = [msg.item_id] if msg.item_id in self._streams else []
        elif msg.type in TERMINAL_TYPES:
            ended = [key for key, (turn_id, *_) in self._streams.items() if turn_id == event.turn_id]
        else:
            return [event]
        tails: list[Event] = []
        for key in ended:
            _, first, text = self._streams.pop(key)
            if tail := text.end(self._redactor()):
                tails.append(_with_delta(event, first, tail))
        return [*tails, event]


class EventRedactor:
    """Every event as the rollout would hold it, for the session's subscribers: text deltas by
    their stream (``DeltaRedactor``), every other event whole (``redacted``). One per session,
    so each event is redacted once, whoever shows it."""

    def __init__(self, redactor: Callable[[], Redactor]) -> None:
        self._redactor = redactor
        self._streams = DeltaRedactor(redactor)

    def __call__(self, event: Event) -> list[Event]:
        try:
            shown = self._streams(event)
            if event.msg.type in DELTA_TYPES:
                return shown
            redactor = self._redactor()
            return [e if e.msg.type in DELTA_TYPES else redacted(e, redactor) for e in shown]
        except Exception:
            if event.msg.type not in TERMINAL_TYPES:
                raise
            return [_unchecked_end(event)]


def _unchecked_end(event: Event) -> Event:
    """A turn's end whose text cannot be checked for secrets (the redactor itself fails): it
    still comes, since a front end waits for it, with only the text the session made itself
    (a failure's message, which says what is not shown)."""
    msg = event.msg
    if isinstance(msg, TurnCompleted):
        msg = msg.model_copy(update={"last_message": ""})
    elif isinstance(msg, TurnAborted):
        msg = msg.model_copy(update={"reason": "its reason is not shown: it could not be checked for secrets"})
    return event.model_copy(update={"msg": msg})


def _with_delta(envelope: Event, msg: AgentMessageDelta | ReasoningDelta, delta: str) -> Event:
    return envelope.model_copy(update={"msg": msg.model_copy(update={"delta": delta})})
