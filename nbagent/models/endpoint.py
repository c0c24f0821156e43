"""Where an HTTP model client connects and with which credentials: one place builds the SDK client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import openai

from nbagent.config import OPENAI_BASE_URL
from nbagent.models.base import ModelEvent, ModelRequest
from nbagent.models.retry import ErrorContext, RetryPolicy, stream_with_retry

WINDOW_KEYS = ("max_model_len", "context_length", "context_window", "max_context_length")
WINDOW_ASK_TIMEOUT = 5.0
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


class HttpModel:
    """What the two OpenAI-API clients share: one SDK client, the error context, bounded retry
    around a single streamed attempt. Subclasses build the body and parse one stream."""

    scripted = False
    wire_api = ""
    path = ""

    def __init__(self, model: str, endpoint: Endpoint | None = None, *, retry: RetryPolicy | None = None) -> None:
        self.model = model
        self.endpoint = endpoint or Endpoint()
        self.retry = retry or RetryPolicy()
        self.label = model
        self._client = self.endpoint.client()
        self._ctx = self.endpoint.context(model, self.wire_api, self.path)
        self._window: int | None = None

    async def context_window(self) -> int | None:
        """The window the server reports for this model (vLLM's ``max_model_len``, or a
        ``context_length`` / ``max_context_length`` field), asked once; ``None`` when it says
        nothing or cannot be asked. OpenAI's own list carries no window: not asked."""
        if self._window is None and self.endpoint.base_url != OPENAI_BASE_URL:
            self._window = 0
            try:
                page = await asyncio.wait_for(self._client.models.list(), WINDOW_ASK_TIMEOUT)
                entry = next((m for m in page.data if m.id == self.model), None)
                extra = (entry.model_extra or {}) if entry is not None else {}
                self._window = next((v for k in WINDOW_KEYS if isinstance(v := extra.get(k), int) and v > 0), 0)
            except Exception:  # noqa: BLE001 - a server without /models simply does not say
                pass
        return self._window or None

    def build_params(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    def _once(self, params: dict[str, Any]) -> AsyncGenerator[ModelEvent, None]:
        raise NotImplementedError

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        params = self.build_params(request)
        return stream_with_retry(lambda: self._once(params), self._ctx, self.retry)

    async def aclose(self) -> None:
        await self._client.close()
