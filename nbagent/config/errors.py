"""The one error configuration raises, and how a validation failure is told in its words."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import ValidationError


class ConfigError(ValueError):
    """A bad config value: the message names the file and the key."""


def problems(exc: ValidationError, name: Callable[[str], str] = str) -> str:
    """Each problem of ``exc`` as ``key 'a.b': what is wrong``, joined by ``; ``; ``name`` spells
    a key as the file it came from does."""
    return "; ".join(
        f"key '{name('.'.join(str(part) for part in e['loc']))}': {e['msg']}" if e["loc"] else e["msg"]
        for e in exc.errors()
    )
