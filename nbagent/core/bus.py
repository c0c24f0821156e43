"""The event bus: wraps each payload in its envelope (``seq``/``thread_id``/``turn_id``/``at``)
and fans the envelope out, in order, to synchronous subscribers and to any number of async
iterators. Subscribers and iterators see each event as ``shown`` makes it (the session's: as the
rollout would hold it), made once for all of them; ``watch`` sees exactly what its producer made."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from nbagent.protocol import Event, EventMsg

logger = logging.getLogger(__name__)

Subscriber = Callable[[Event], None]

_CLOSED: Any = object()


class EventBus:
    def __init__(self) -> None:
        self._seq = 0
        self.shown: Callable[[Event], Iterable[Event]] = lambda event: (event,)
        """What subscribers get for one emitted event: none, it, or more (a held tail first)."""
        self._watchers: tuple[Subscriber, ...] = ()
        self._subscribers: tuple[Subscriber, ...] = ()
        """Replaced, never changed, on (un)subscribe: an emit walks it without a copy, and a
        subscriber added during an emit sees the next event."""
        self._queues: list[asyncio.Queue[Any]] = []
        self.thread_id = ""

    @property
    def seq(self) -> int:
        return self._seq

    def emit(self, msg: EventMsg, *, turn_id: str | None = None) -> Event:
        """Wrap ``msg`` and deliver it. A failing subscriber is logged, never propagated."""
        self._seq += 1
        event = Event.wrap(msg, seq=self._seq, thread_id=self.thread_id, turn_id=turn_id)
        for watcher in self._watchers:
            try:
                watcher(event)
            except Exception:  # boundary: a broken watcher must not break the turn
                logger.exception("event watcher %r failed on %s", watcher, msg.type)
        if not self._subscribers and not self._queues:
            return event  # nobody to show it to: not redacted for no one
        try:
            shown_events = list(self.shown(event))
        except Exception:  # boundary: shown as nothing rather than as it was made
            logger.exception("event %s could not be made to show", msg.type)
            shown_events = []
        for shown in shown_events:
            for subscriber in self._subscribers:
                try:
                    subscriber(shown)
                except Exception:  # boundary: a broken renderer must not break the turn
                    logger.exception("event subscriber %r failed on %s", subscriber, msg.type)
            for queue in self._queues:
                queue.put_nowait(shown)
        return event

    def watch(self, callback: Subscriber) -> None:
        """``callback`` gets every event as made, before any subscriber: for the core's own
        records, which redact what they show themselves."""
        self._watchers = (*self._watchers, callback)

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        self._subscribers = (*self._subscribers, callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                i = self._subscribers.index(callback)
                self._subscribers = self._subscribers[:i] + self._subscribers[i + 1 :]

        return unsubscribe

    def events(self) -> AsyncIterator[Event]:
        """Every event emitted after this call (not after the first ``__anext__``), until close."""
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._queues.append(queue)
        return self._drain(queue)

    async def _drain(self, queue: asyncio.Queue[Any]) -> AsyncIterator[Event]:
        try:
            while (event := await queue.get()) is not _CLOSED:
                yield event
        finally:
            if queue in self._queues:
                self._queues.remove(queue)

    def close(self) -> None:
        for queue in self._queues:
            queue.put_nowait(_CLOSED)
