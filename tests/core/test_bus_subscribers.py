"""The bus's subscriber list while it emits: one added during an emit sees the next event, not
this one; one removed during an emit (even by itself) does not stop the others seeing it."""

from __future__ import annotations

from collections.abc import Callable

from nbagent.core.bus import EventBus
from nbagent.protocol import Event, WarningEvent


def test_subscribers_changed_during_an_emit_take_effect_from_the_next_event() -> None:
    bus = EventBus()
    seen: dict[str, list[str]] = {"first": [], "late": [], "last": []}
    stops: list[Callable[[], None]] = []

    def record(name: str) -> Callable[[Event], None]:
        return lambda e: seen[name].append(e.msg.message)  # type: ignore[union-attr]

    def first(e: Event) -> None:
        record("first")(e)
        if len(seen["first"]) == 1:
            bus.subscribe(record("late"))
            stops[0]()  # removes itself

    stops.append(bus.subscribe(first))
    stop_last = bus.subscribe(record("last"))
    bus.emit(WarningEvent(message="one"))
    bus.emit(WarningEvent(message="two"))
    stop_last()
    stop_last()  # a second unsubscribe is harmless
    bus.emit(WarningEvent(message="three"))
    assert seen == {"first": ["one"], "late": ["two", "three"], "last": ["one", "two"]}
