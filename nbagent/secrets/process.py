"""The secrets of this process as a whole, known to every redactor and every check.

A server's own bearer token, and each OAuth token this process reads or is issued, is a secret
of the whole process: every rollout this process writes redacts it, including rollouts opened
before it was known, and no MCP server but its owner is sent it.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Mapping
from types import MappingProxyType

from nbagent.secrets.names import MIN_SECRET_LEN

__all__ = ["add_process_secret", "process_secret_sources", "process_secrets", "process_secrets_version"]

_lock = threading.Lock()
_process: frozenset[str] = frozenset()
_sources: dict[str, tuple[str, Hashable]] = {}
_version = 0


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
