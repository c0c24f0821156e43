"""Secrets and their redaction: which values are secrets, and every way nbagent hides them.

A leaf: it imports nothing of nbagent but ``protocol/``, so ``mcp/``, ``store/``, ``core/`` and
the front ends all redact by one rule. Modules by job: ``names`` (which names and values are
secrets), ``process`` (the secrets of the whole process), ``redactor`` (one scan over a text, a
JSON value or a rollout line), ``stream`` (a secret split over streamed fragments), ``events``
(a session's events as the rollout holds them), ``provider`` (what a model provider is sent),
``keyed`` (a protocol message a person reads), ``kept`` (what a server must not be sent).
"""

from __future__ import annotations

from nbagent.secrets.events import DELTA_TYPES, DeltaRedactor, EventRedactor, redacted
from nbagent.secrets.kept import SecretsKept
from nbagent.secrets.keyed import KeyedRedactor, keyed_values
from nbagent.secrets.names import (
    MIN_SECRET_LEN,
    header_credential,
    may_be_secret,
    named_secrets,
    names_a_secret,
    secret_header,
    secret_values,
)
from nbagent.secrets.process import (
    add_process_secret,
    process_secret_sources,
    process_secrets,
    process_secrets_version,
)
from nbagent.secrets.provider import ProviderRedaction
from nbagent.secrets.redactor import REDACTED, Redactor
from nbagent.secrets.stream import StreamRedactor

__all__ = [
    "DELTA_TYPES",
    "MIN_SECRET_LEN",
    "REDACTED",
    "DeltaRedactor",
    "EventRedactor",
    "KeyedRedactor",
    "ProviderRedaction",
    "Redactor",
    "SecretsKept",
    "StreamRedactor",
    "add_process_secret",
    "header_credential",
    "keyed_values",
    "may_be_secret",
    "named_secrets",
    "names_a_secret",
    "process_secret_sources",
    "process_secrets",
    "process_secrets_version",
    "redacted",
    "secret_header",
    "secret_values",
]
