"""Which names and values are secrets: the one rule every redaction and every check uses.

Redacting a value that is not a secret destroys history (``NODE_ENV = "production"`` made every
prompt read "deploy to [redacted]"), so a value is a secret by what it is (an API key, a bearer
token, a header value: the caller says so) or by the name it is kept under, and never when it is
too short to be one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = [
    "MIN_SECRET_LEN", "header_credential", "may_be_secret", "named_secrets", "names_a_secret", "secret_header",
    "secret_values",
]  # fmt: skip

MIN_SECRET_LEN = 8
"""Shorter values are not redacted: no real key is that short, and replacing ``"user"`` or
``"approve"`` wherever it occurs would cut words out of every line."""

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)
_SCHEME = re.compile(r"(?i)(?:bearer|basic|token)\s+(\S+)")
"""A header value that is a scheme and a credential."""
_CREDENTIAL_HEADER = re.compile(r"AUTH|COOKIE|SESSION", re.IGNORECASE)
"""Header names that carry a credential beside the secret words of ``names_a_secret``:
``Authorization``, ``Proxy-Authorization``, ``X-Auth``, ``Cookie``, ``X-Session-Id``."""
_SETTING_HEADERS = frozenset({
    "accept", "accept-encoding", "accept-language", "anthropic-beta", "anthropic-version", "cache-control",
    "content-type", "http-referer", "mcp-protocol-version", "openai-beta", "openai-organization", "openai-project",
    "origin", "referer", "user-agent", "x-title",
})  # fmt: skip
"""Headers whose values are settings, never redacted: the model is sent the rollout's history, so
an ``HTTP-Referer`` or an ``Accept`` redacted would be cut out of the person's own prompt. Any
other header's value is redacted whatever its name (a custom one may well be a key)."""


def names_a_secret(name: str) -> bool:
    """``GITHUB_TOKEN``, ``api_key``, ``DbPassword``: a name under which secrets are kept."""
    return bool(_SECRET_NAME.search(name))


def secret_values(values: Iterable[str | None]) -> list[str]:
    """The values long enough to be secrets."""
    return [v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_LEN]


def named_secrets(env: Mapping[str, str]) -> list[str]:
    """The values of ``env`` whose name names a secret (settings like ``NODE_ENV`` are not)."""
    return secret_values(value for name, value in env.items() if names_a_secret(name))


def header_credential(value: str) -> str | None:
    """The credential of a ``Bearer ...`` / ``Basic ...`` header value on its own: the token is
    the secret, with or without the scheme in front."""
    scheme = _SCHEME.fullmatch(value)
    return scheme.group(1) if scheme is not None else None


def secret_header(key: str, value: str, credentials_only: bool) -> bool:
    """Whether a header's value is a secret: a credential always (``Authorization``, ``Cookie``,
    ``X-Api-Key``, ``X-Session-Id``, any ``Bearer ...`` value); another header unless it is a
    well-known setting (``Accept``, ``HTTP-Referer``) or only credentials count."""
    if _CREDENTIAL_HEADER.search(key) or names_a_secret(key) or _SCHEME.fullmatch(value) is not None:
        return True
    return not credentials_only and key.lower() not in _SETTING_HEADERS


def may_be_secret(key: str, value: str, *, header: bool) -> bool:
    """Whether a value a config file holds under ``key`` (an environment variable's name, or a
    header's) may be a secret, so ``nbagent mcp import`` must not copy it: one kept under a
    secret's or a credential's name, and any other long enough to be one (``MIN_SECRET_LEN``)
    but a well-known header setting's. Wrongly withheld, a setting costs the person a variable to
    set; wrongly copied, a key lands in a file that may be shared."""
    if header and secret_header(key, value, credentials_only=True) or not header and names_a_secret(key):
        return True
    return len(value) >= MIN_SECRET_LEN and not (header and key.lower() in _SETTING_HEADERS)
