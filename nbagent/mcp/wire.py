"""The JSON-RPC traffic of one MCP server, kept for ``inspect wire`` (DESIGN §12.3).

The tap sits between a transport and the SDK's dispatcher: each message sent or received costs
one append of a reference to a bounded deque, nothing else. Serialising and redacting happen only
when someone inspects, so the call path pays O(1) per message whether anyone ever looks or not.

Redaction is a security boundary (docs/security.md, "The wire view"): a message is shown only
after every known secret (the server's env values, its header values and bearer token, its OAuth
tokens, the process's own secrets) is replaced wherever it occurs, the value of every key that
names a secret (``token``, ``password``, ``api_key``...) is replaced, and ``Bearer ...`` text is cut.
"""

from __future__ import annotations

import os
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Any, Literal

from pydantic import BaseModel, Field

from nbagent.config import Config, McpServerConfig
from nbagent.store.rollout import REDACTED, Redactor
from nbagent.store.secrets import named_secrets, names_a_secret, process_secrets, secret_values

__all__ = ["WIRE_KEEP", "WireMessage", "WireTap", "server_secrets", "WireRedactor"]

WIRE_KEEP = 200
"""Messages kept per server: enough for a startup and a few calls, bounded whatever runs."""

Direction = Literal["sent", "received"]
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]+")
_KEYED_TEXT = re.compile(
    r"""(?i)(["']?[\w-]*(?:key|token|secret|password|credential|authorization)[\w-]*["']?\s*[:=]\s*["']?)"""
    r"""(?!\[redacted\]|(?i:bearer|basic)\b)([^"'\s,;}&]{4,})"""
)
"""``"api_key": "sk-..."`` or ``token=...`` inside a text (a result that is JSON as text)."""
_NOT_SECRET_KEYS = frozenset({"progressToken", "nextCursor", "cursor", "maxTokens", "max_tokens"})
"""Protocol fields whose names contain a secret word but whose values are ids or numbers."""


class WireMessage(BaseModel):
    """One JSON-RPC message as ``inspect wire`` shows it, redacted."""

    seq: int
    """Position in this server's traffic since it started (older ones may have been dropped)."""
    at: float
    direction: Direction
    kind: Literal["request", "notification", "response", "error", "transport_error"]
    method: str | None = None
    id: str | int | None = None
    message: dict[str, Any] = Field(default_factory=dict)
    """The whole envelope, ``_meta`` included, after redaction."""


class WireTap:
    """A bounded record of what crossed one transport, raw until inspected."""

    def __init__(self, keep: int = WIRE_KEEP) -> None:
        self._log: deque[tuple[int, float, Direction, Any]] = deque(maxlen=keep)
        self._seq = 0

    def note(self, direction: Direction, message: Any) -> None:
        self._seq += 1
        self._log.append((self._seq, time.time(), direction, message))

    def tap(self, transport: AbstractAsyncContextManager[Any]) -> AbstractAsyncContextManager[Any]:
        """``transport`` with both of its streams recorded here."""

        @asynccontextmanager
        async def tapped() -> AsyncIterator[tuple[Any, Any]]:
            async with transport as (read, write):
                yield _Read(read, self), _Write(write, self)

        return tapped()

    def messages(self, secrets: Iterable[str], last: int | None = None) -> list[WireMessage]:
        """The last ``last`` messages (all kept when ``None``), oldest first, redacted now.

        A value sent under a secret-named key is a secret everywhere in the view: a server that
        echoes it back, in a result or inside a JSON text, shows ``[redacted]`` there too."""
        records = list(self._log)[-last:] if last else list(self._log)
        dumped = [(seq, at, direction, _dump(item)) for seq, at, direction, item in records]
        keyed: list[str] = []
        for *_, data in dumped:
            _keyed_values(data, keyed)
        redactor = WireRedactor([*secrets, *keyed])
        return [redactor.message(*record) for record in dumped]


class _Read:
    """The transport's read stream, noting each message it yields."""

    def __init__(self, inner: Any, tap: WireTap) -> None:
        self._inner, self._tap = inner, tap

    async def receive(self) -> Any:
        item = await self._inner.receive()
        self._tap.note("received", item)
        return item

    def __aiter__(self) -> _Read:
        return self

    async def __anext__(self) -> Any:
        item = await self._inner.__anext__()
        self._tap.note("received", item)
        return item

    async def __aenter__(self) -> _Read:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:  # ``aclose``, ``last_context``, ...
        return getattr(self._inner, name)


class _Write:
    """The transport's write stream, noting each message before it goes."""

    def __init__(self, inner: Any, tap: WireTap) -> None:
        self._inner, self._tap = inner, tap

    async def send(self, item: Any, /) -> None:
        self._tap.note("sent", item)
        await self._inner.send(item)

    async def __aenter__(self) -> _Write:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def server_secrets(name: str, cfg: McpServerConfig, config: Config | None, *, every_env_value: bool = True) -> list[str]:
    """Every value of this server that must never be shown: its env values, its header values,
    the variables its headers and bearer token come from, its stored OAuth tokens and the
    process's own secrets. The wire view hides every env value (over-redacting a protocol
    message costs nothing); ``every_env_value=False`` hides only those named like secrets, for
    text a person must read whole, such as the error a failing server prints."""
    env = os.environ
    own = cfg.env.values() if every_env_value else named_secrets(cfg.env)
    values: list[str | None] = [*own, *cfg.http_headers.values()]
    values += [env.get(var) for var in [cfg.bearer_token_env_var or "", *cfg.env_http_headers.values()]]
    values += [v for k, v in env.items() if names_a_secret(k)]
    if config is not None and config.api_key:
        values.append(config.api_key)
    values += _oauth_secrets(name, cfg, config)
    return secret_values([*values, *process_secrets()])


def _oauth_secrets(name: str, cfg: McpServerConfig, config: Config | None) -> list[str | None]:
    if config is None or not cfg.url:
        return []
    from nbagent.mcp.oauth.storage import OAuthRecord, backend_for

    with suppress(Exception):  # no record, a keyring that cannot be read: nothing stored to hide
        text = backend_for(name, cfg.url, config).read()
        if text:
            record = OAuthRecord.model_validate_json(text)
            tokens, client = record.tokens, record.client_info
            return [
                tokens.access_token if tokens else None,
                tokens.refresh_token if tokens else None,
                client.client_secret if client else None,
            ]
    return []


class WireRedactor:
    """Turns one recorded message into a :class:`WireMessage` with every secret gone."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._values = Redactor(secrets)

    def message(self, seq: int, at: float, direction: Direction, data: dict[str, Any] | str) -> WireMessage:
        if isinstance(data, str):  # an exception the transport passed up instead of a message
            return WireMessage(seq=seq, at=at, direction=direction, kind="transport_error", message={"error": self.text(data)})
        kind = "error" if "error" in data else "response" if "result" in data else (
            "request" if "id" in data else "notification"
        )
        return WireMessage(
            seq=seq, at=at, direction=direction, kind=kind, method=data.get("method"), id=data.get("id"),
            message=self.value(data),
        )

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


def _dump(item: Any) -> dict[str, Any] | str:
    if isinstance(item, BaseException):
        return f"{type(item).__name__}: {item}"
    return getattr(item, "message", item).model_dump(by_alias=True, exclude_none=True, mode="json")


def _secret_key(key: str) -> bool:
    return key not in _NOT_SECRET_KEYS and (names_a_secret(key) or key.lower() == "authorization")


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _keyed_values(value: Any, found: list[str]) -> None:
    """Every string held under a secret-named key, however deep."""
    if isinstance(value, dict):
        for key, v in value.items():
            if _secret_key(key) and isinstance(v, str):
                found.append(v)
            else:
                _keyed_values(v, found)
    elif isinstance(value, list):
        for v in value:
            _keyed_values(v, found)
