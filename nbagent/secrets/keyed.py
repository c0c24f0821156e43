"""Redaction of a protocol message a person reads (``inspect wire``): beyond the known secrets,
the value of every key that names a secret and the credential of ``Bearer ...`` text, since a
message may carry a secret nbagent never held (a server's own token in its reply)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from nbagent.secrets.names import names_a_secret
from nbagent.secrets.redactor import REDACTED, Redactor

__all__ = ["KeyedRedactor", "keyed_values"]

_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+")
_KEYED_TEXT = re.compile(
    r"""(?i)(["']?[\w-]*(?:key|token|secret|password|credential|authorization)[\w-]*["']?\s*[:=]\s*["']?)"""
    r"""(?!\[redacted\]|(?i:bearer|basic)\b)([^"'\s,;}&]{4,})"""
)
"""``"api_key": "sk-..."`` or ``token=...`` inside a text (a result that is JSON as text)."""
_NOT_SECRET_KEYS = frozenset({"progressToken", "nextCursor", "cursor", "maxTokens", "max_tokens"})
"""Protocol fields whose names contain a secret word but whose values are ids or numbers."""


class KeyedRedactor:
    """Every known secret replaced wherever it occurs, the value of every key that names a secret
    (``token``, ``password``, ``api_key``...) replaced, and ``Bearer ...`` text cut."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._values = Redactor(secrets)

    def text(self, value: str) -> str:
        value = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", self._values.text(value))
        return _KEYED_TEXT.sub(lambda m: m.group(1) + REDACTED, value)

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, v in value.items():
                out[self.text(key)] = REDACTED if _secret_key(key) and _scalar(v) else self.value(v)
            return out
        return value


def keyed_values(value: Any) -> list[str]:
    """Every string held under a secret-named key, however deep: a secret wherever else it
    occurs too (a server that echoes it back, in a result or inside a JSON text)."""
    found: list[str] = []
    _keyed_values(value, found)
    return found


def _secret_key(key: str) -> bool:
    return key not in _NOT_SECRET_KEYS and (names_a_secret(key) or key.lower() == "authorization")


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _keyed_values(value: Any, found: list[str]) -> None:
    if isinstance(value, dict):
        for key, v in value.items():
            if _secret_key(key) and isinstance(v, str):
                found.append(v)
            else:
                _keyed_values(v, found)
    elif isinstance(value, list):
        for v in value:
            _keyed_values(v, found)
