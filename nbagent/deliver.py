"""Handing an event to code that is not the emitter's (a subscriber, a renderer, a session's
callback): a consumer that raises is logged and the emitter goes on, so one broken view or
subscriber never stops a connection, a turn or the event flow."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

E = TypeVar("E")


def deliver(consumer: Callable[[E], object], event: E, log: logging.Logger) -> None:
    """``consumer(event)``; an exception is logged on ``log``, never raised."""
    try:
        consumer(event)
    except Exception:  # boundary: the consumer's bug is not the emitter's
        kind = getattr(event, "type", type(event).__name__)
        log.exception("%s failed on %s", getattr(consumer, "__qualname__", repr(consumer)), kind)
