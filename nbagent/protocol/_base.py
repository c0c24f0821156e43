"""The one base class of every wire and disk type: strict, snake_case, JSON round-trip exact."""

from __future__ import annotations

import os
import time

from pydantic import BaseModel, ConfigDict


class ProtocolModel(BaseModel):
    """Unknown fields are errors, so a typo in a rollout or an op never passes silently."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


def new_id(prefix: str) -> str:
    """A short, plain-string id such as ``turn_3f2a...``: 80 random bits, as hex. (A ``uuid4``
    made only to be cut to the same 20 digits costs twice as much, four times per tool call.)"""
    return f"{prefix}_{os.urandom(10).hex()}"


def now() -> float:
    """Wall-clock seconds; every ``*_at`` field uses this unit."""
    return time.time()
