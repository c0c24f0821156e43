"""A running call's own events: what a tool reports beyond progress (a patch's changes before
and after it is applied, a command's output as it comes) goes out on the session's stream,
inside the call, through the sink the core sets around each call it runs.

A context variable rather than a parameter: ``ToolProvider.call_tool`` stays the one signature
every source implements (MCP servers have nothing to say here), and a tool that runs outside a
session (a test, a script) emits nowhere.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from nbagent.protocol import EventMsg

Sink = Callable[[EventMsg], object]

_sink: ContextVar[Sink | None] = ContextVar("nbagent_call_events", default=None)


@contextmanager
def events_to(sink: Sink) -> Iterator[None]:
    """Around one call: every ``emit`` inside it goes to ``sink`` (the turn's, with its turn id)."""
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)


def emit(msg: EventMsg) -> bool:
    """Announce ``msg`` on the stream of the call running in this context; ``False`` when no
    session runs it."""
    sink = _sink.get()
    if sink is None:
        return False
    sink(msg)
    return True
