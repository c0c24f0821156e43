"""The secrets one MCP server must not be sent, and the one-scan check of a call against them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from nbagent.secrets.redactor import Redactor

__all__ = ["SecretsKept"]


class SecretsKept:
    """The secrets one server must not be sent (those nbagent holds that it was not given), and
    the one-scan check of a call's arguments against them."""

    def __init__(self, sources: Mapping[str, str], given: Iterable[str]) -> None:
        given = list(given)
        # A secret inside a value the server was given (a token in its "Bearer ..." header) is its own.
        self._what = {secret: what for secret, what in sources.items() if not any(secret in g for g in given)}
        self._redactor = Redactor(self._what)

    def find(self, arguments: Any) -> str | None:
        """What the secret ``arguments`` hold is (never its value), or ``None``: every string,
        keys included, however deep, in one scan of their JSON."""
        if not self._redactor:
            return None
        found = self._redactor.find(json.dumps(arguments, ensure_ascii=False, default=str))
        return self._what[found] if found is not None else None
