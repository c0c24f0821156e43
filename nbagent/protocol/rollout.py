"""Rollout lines: one JSON object per line of a thread's append-only log."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from nbagent.protocol._base import ProtocolModel, now
from nbagent.protocol.events import TokenUsage
from nbagent.protocol.items import Item
from nbagent.protocol.ops import Entry, Policy


class ThreadMeta(ProtocolModel):
    """First line of every rollout."""

    type: Literal["thread_meta"] = "thread_meta"
    thread_id: str
    name: str | None = None
    created_at: float = Field(default_factory=now)
    model: str = ""
    cwd: str = ""
    notebook_path: str | None = None
    model_provider: str | None = None
    """The ``[model_providers]`` entry ``model`` ran on; none for a scripted model. With
    ``base_url`` and ``approval_policy``, what a resumed thread goes on with unless told otherwise."""
    base_url: str | None = None
    """That provider's server as it was (no credentials, no query): named when the provider is gone."""
    approval_policy: Policy | None = None


class TurnRecord(ProtocolModel):
    """Start or end of a turn: which entry started it and how it ended."""

    type: Literal["turn"] = "turn"
    turn_id: str
    status: Literal["started", "completed", "aborted", "failed"]
    entry: Entry = "python"
    model: str = ""
    policy: Policy = "on-request"
    at: float = Field(default_factory=now)
    reason: str | None = None
    usage: TokenUsage | None = None
    """On a turn's end: the tokens its model requests cost (Codex records ``token_count`` events;
    one sum per turn is what resume and the thread's total need)."""


class ItemRecord(ProtocolModel):
    type: Literal["item"] = "item"
    item: Item


class NameRecord(ProtocolModel):
    """A thread renamed after creation."""

    type: Literal["name"] = "name"
    name: str


RolloutLine = Annotated[ThreadMeta | TurnRecord | ItemRecord | NameRecord, Field(discriminator="type")]
RolloutLineAdapter: TypeAdapter[RolloutLine] = TypeAdapter(RolloutLine)
