"""The one base class of every wire and disk type: strict, snake_case, JSON round-trip exact."""

from __future__ import annotations

import time
import uuid

from pydantic import BaseModel, ConfigDict


class ProtocolModel(BaseModel):
    """Unknown fields are errors, so a typo in a rollout or an op never passes silently."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def new_id(prefix: str) -> str:
    """A short, sortable-enough, plain-string id such as ``turn_3f2a...``."""
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def now() -> float:
    """Wall-clock seconds; every ``*_at`` field uses this unit."""
    return time.time()
