"""Where an HTTP model client connects and with which credentials: one place builds the SDK client."""

from __future__ import annotations

from dataclasses import dataclass, field

import openai

from nbagent.models.retry import ErrorContext

OPENAI_BASE_URL = "https://api.openai.com/v1"
NO_KEY = "not-needed"
"""Placeholder key for local servers: the SDK refuses to start without one."""


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible server. ``api_key`` stays out of ``repr`` and every message."""

    base_url: str = OPENAI_BASE_URL
    api_key: str = field(default=NO_KEY, repr=False)
    key_hint: str = "OPENAI_API_KEY"
    """Where the user sets the key; named in auth errors."""
    provider: str = "openai"
    headers: dict[str, str] = field(default_factory=dict)
    query: dict[str, str] = field(default_factory=dict)
    idle_timeout: float = 300.0
    connect_timeout: float = 10.0

    def client(self) -> openai.AsyncOpenAI:
        """The SDK client with its own retries off: ``retry.stream_with_retry`` owns retrying."""
        return openai.AsyncOpenAI(
            api_key=self.api_key,
            base_url=self.base_url,
            max_retries=0,
            timeout=openai.Timeout(self.idle_timeout, connect=self.connect_timeout),
            default_headers=self.headers or None,
            default_query=self.query or None,
        )

    def context(self, model: str, wire_api: str, endpoint: str) -> ErrorContext:
        return ErrorContext(
            base_url=self.base_url,
            model=model,
            wire_api=wire_api,
            endpoint=endpoint,
            key_hint=self.key_hint,
            provider=self.provider,
            api_key=None if self.api_key == NO_KEY else self.api_key,
        )
