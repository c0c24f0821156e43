"""Plain helpers for the model client tests (fixtures live in conftest.py)."""

from __future__ import annotations

from collections.abc import Callable

from nbagent.models.base import ModelClient, ModelEvent, ModelRequest, TextDelta, ToolCallDone
from nbagent.protocol import UserMessage

API_KEY = "sk-test-SECRET-0123456789abcdef"
MODEL = "fake-model"

MakeClient = Callable[..., ModelClient]
"""The ``make_client`` fixture: ``make(retries=3, base_url=None) -> ModelClient``."""


def ask(text: str = "hi", **kwargs: object) -> ModelRequest:
    return ModelRequest(model=MODEL, items=[UserMessage(text=text)], **kwargs)  # type: ignore[arg-type]


async def collect(
    client: ModelClient, request: ModelRequest | None = None, sink: list[ModelEvent] | None = None
) -> list[ModelEvent]:
    """All events of one response; with ``sink``, events seen before an exception stay visible."""
    events: list[ModelEvent] = [] if sink is None else sink
    async for event in client.stream(request or ask()):
        events.append(event)
    return events


def text_of(events: list[ModelEvent]) -> str:
    return "".join(e.delta for e in events if isinstance(e, TextDelta))


def calls_of(events: list[ModelEvent]) -> list[ToolCallDone]:
    return [e for e in events if isinstance(e, ToolCallDone)]
