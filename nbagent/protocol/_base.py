"""The one base class of every wire and disk type: strict, snake_case, JSON round-trip exact."""

from __future__ import annotations

import os
import time
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict


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


def unicode_text(text: str) -> str:
    """``text`` with each lone surrogate (which no encoder writes) as U+FFFD, as a decoder shows
    bytes it cannot read. ``json`` and the ``openai`` client decode ``"\\ud800"`` into one, and a
    record, event or request holding it cannot be encoded. Checked before anything is copied:
    this runs on every streamed delta."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


UnicodeText = Annotated[str, AfterValidator(unicode_text)]
"""A string field made of text someone else wrote (a model, a front end): always encodable."""
