"""Which values are secrets: the rule the rollout writer redacts by, and the process's own.

Redacting a value that is not a secret destroys history (``NODE_ENV = "production"`` made every
prompt read "deploy to [redacted]"), so a value is a secret by what it is (an API key, a bearer
token, a header value: the caller says so) or by the name it is kept under, and never when it is
too short to be one. A server's own bearer token, and each OAuth token this process reads or is
issued, is a secret of the whole process: every rollout this process writes redacts it, including
rollouts opened before it was known, and no MCP server but its owner is sent it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Hashable, Iterable, Mapping
from types import MappingProxyType

__all__ = [
    "MIN_SECRET_LEN",
    "add_process_secret",
    "names_a_secret",
    "named_secrets",
    "process_secret_sources",
    "process_secrets",
    "process_secrets_version",
    "secret_values",
]

MIN_SECRET_LEN = 8
"""Shorter values are not redacted: no real key is that short, and replacing ``"user"`` or
``"approve"`` wherever it occurs would cut words out of every line."""

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)

_lock = threading.Lock()
_process: frozenset[str] = frozenset()
_sources: dict[str, tuple[str, Hashable]] = {}
_version = 0


def names_a_secret(name: str) -> bool:
    """``GITHUB_TOKEN``, ``api_key``, ``DbPassword``: a name under which secrets are kept."""
    return bool(_SECRET_NAME.search(name))


def secret_values(values: Iterable[str | None]) -> list[str]:
    """The values long enough to be secrets."""
    return [v for v in values if isinstance(v, str) and len(v) >= MIN_SECRET_LEN]


def named_secrets(env: Mapping[str, str]) -> list[str]:
    """The values of ``env`` whose name names a secret (settings like ``NODE_ENV`` are not)."""
    return secret_values(value for name, value in env.items() if names_a_secret(name))


def add_process_secret(value: str, what: str = "a token of a server nbagent runs", owner: Hashable = None) -> None:
    """A secret of this process: redacted from every rollout it writes, and sent to no MCP
    server but ``owner`` (the key ``mcp.wire.owner_of`` gives a server it belongs to; ``None``
    for nbagent's own, which no server is given). ``what`` names it where a value must not be
    shown. The first registration of a value decides both."""
    global _process, _version
    if len(value) < MIN_SECRET_LEN:
        return
    with _lock:
        if value not in _process:
            _sources[value] = (what, owner)
            _process = _process | {value}
            _version += 1


def process_secrets() -> frozenset[str]:
    return _process


def process_secret_sources() -> Mapping[str, tuple[str, Hashable]]:
    """Each process secret -> (what it is, whose it is)."""
    return MappingProxyType(_sources)


def process_secrets_version() -> int:
    """Changes whenever a process secret is added, so a writer knows to pick it up."""
    return _version
