"""The JSON-RPC traffic of one MCP server, kept for ``inspect wire`` (DESIGN §12.3).

The tap sits between a transport and the SDK's dispatcher: each message sent or received costs
one append of a reference to a bounded deque, nothing else. Serialising and redacting happen only
when someone inspects, so the call path pays O(1) per message whether anyone ever looks or not.

Redaction is a security boundary (docs/security.md, "The wire view"): a message is shown only
after every known secret (the server's env values, its header values, bearer token and URL
password, the OAuth tokens this process holds, the process's own secrets) is replaced wherever it
occurs, the value of every key that names a secret (``token``, ``password``, ``api_key``...) is
replaced, and ``Bearer ...`` text is cut (``nbagent.secrets.KeyedRedactor``).

Which of the config's values are secrets, and of whom, is decided here too: ``secret_sources``
names every secret nbagent holds (the rollout redacts by the same rule), ``given_secrets`` what
one server was handed itself, for ``nbagent.secrets.SecretsKept`` to refuse a call whose
arguments would carry another's to it.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Literal
from urllib.parse import urlsplit

import anyio
from pydantic import BaseModel, Field

from nbagent.config import Config, McpServerConfig
from nbagent.mcp.env import server_env
from nbagent.secrets import (
    MIN_SECRET_LEN,
    KeyedRedactor,
    header_credential,
    keyed_values,
    names_a_secret,
    process_secret_sources,
    secret_header,
    secret_values,
)

__all__ = ["WIRE_KEEP", "WireMessage", "WireTap", "given_secrets", "secret_sources", "server_secrets", "url_password"]

WIRE_KEEP = 200
"""Messages kept per server: enough for a startup and a few calls, bounded whatever runs."""

Direction = Literal["sent", "received"]

MessageKind = Literal["request", "notification", "response", "error", "transport_error"]


class WireMessage(BaseModel):
    """One JSON-RPC message as ``inspect wire`` shows it, redacted."""

    seq: int
    """Position in this server's traffic since it started (older ones may have been dropped)."""
    at: float
    direction: Direction
    kind: MessageKind
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

    def tap(self, transport: AbstractAsyncContextManager[Any], *, reads: bool = True) -> AbstractAsyncContextManager[Any]:
        """``transport`` with both of its streams recorded here; with ``reads=False`` only what
        is sent (a stdio transport notes what it reads itself, in the order it read it)."""
        return watched(transport, received=self._received if reads else _same, sent=self._sent)

    def _received(self, item: Any) -> Any:
        self.note("received", item)
        return item

    def _sent(self, item: Any) -> Any:
        self.note("sent", item)
        return item

    def messages(self, secrets: Iterable[str], last: int | None = None) -> list[WireMessage]:
        """The last ``last`` messages (all kept when ``None``), oldest first, redacted now.

        A value sent under a secret-named key is a secret everywhere in the view: a server that
        echoes it back, in a result or inside a JSON text, shows ``[redacted]`` there too."""
        records = list(self._log)[-last:] if last else list(self._log)
        dumped = [(seq, at, direction, _dump(item)) for seq, at, direction, item in records]
        redactor = KeyedRedactor([*secrets, *(value for *_, data in dumped for value in keyed_values(data))])
        return [_message(redactor, *record) for record in dumped]


Watch = Callable[[Any], Any]
"""Sees one message and returns the one to pass on: the same, one put in its place, or (on the
read side) ``None`` to take it out of the stream."""


def _same(item: Any) -> Any:
    return item


def watched(
    transport: AbstractAsyncContextManager[Any],
    *,
    received: Watch = _same,
    sent: Watch = _same,
    ended: Callable[[], None] | None = None,
) -> AbstractAsyncContextManager[Any]:
    """``transport`` with each message it yields passed through ``received`` and each one sent
    through ``sent`` (the wire tap records them; ``ToolHints`` reads the tool listings; the direct
    ``tools/call`` lane keeps the SDK's stamp), and ``ended`` told when the read side ends."""

    @asynccontextmanager
    async def streams() -> AsyncIterator[tuple[Any, Any]]:
        async with transport as (read, write):
            yield _Read(read, received, ended), _Write(write, sent)

    return streams()


class _Read:
    """The transport's read stream, passing each message it yields through ``see``."""

    def __init__(self, inner: Any, see: Watch, ended: Callable[[], None] | None) -> None:
        self._inner, self._see, self._ended = inner, see, ended

    async def receive(self) -> Any:
        return await self._next(self._inner.receive)

    def __aiter__(self) -> _Read:
        return self

    async def __anext__(self) -> Any:
        return await self._next(self._inner.__anext__)

    async def _next(self, read: Callable[[], Awaitable[Any]]) -> Any:
        try:
            while (item := self._see(await read())) is None:
                pass  # taken out: read the next
        except (anyio.EndOfStream, anyio.ClosedResourceError, StopAsyncIteration):
            if self._ended is not None:
                self._ended()
            raise
        return item

    async def __aenter__(self) -> _Read:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:  # ``aclose``, ``last_context``, ...
        return getattr(self._inner, name)


class _Write:
    """The transport's write stream, passing each message through ``see`` before it goes."""

    def __init__(self, inner: Any, see: Watch) -> None:
        self._inner, self._see = inner, see

    async def send(self, item: Any, /) -> None:
        await self._inner.send(self._see(item))

    async def __aenter__(self) -> _Write:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def server_secrets(name: str, cfg: McpServerConfig, config: Config | None, *, every_env_value: bool = True) -> list[str]:
    """Every value that must never be shown beside this server: the rollout's rule over it
    (``secret_sources``: its credentials, the model's, the environment's and the process's,
    OAuth tokens included). The wire view hides every env value as well (over-redacting a
    protocol message costs nothing), and every value its config took from a variable;
    ``every_env_value=False`` keeps to those named like secrets, for text a person must read
    whole, such as the error a failing server prints."""
    own = [*cfg.env.values(), *cfg.expanded] if every_env_value else []
    return secret_values([*own, *secret_sources(config, {name: cfg})])


def url_password(url: str | None) -> str | None:
    """The password of a ``user:password@host`` URL, which the client sends as a Basic header."""
    try:
        return urlsplit(url).password if url else None
    except ValueError:  # a malformed URL holds no password the client could send
        return None


def secret_sources(
    config: Config | None, servers: Mapping[str, McpServerConfig], *, credentials_only: bool = False
) -> dict[str, str]:
    """Every secret nbagent holds -> what it is ("the model API key", "MCP server 'a''s header
    Authorization"), never its value: the rollout's rule (docs/security.md, "History on disk"),
    the credential of a ``Bearer ...`` header on its own and this process's own secrets (OAuth
    tokens among them). Of headers, every value but a well-known setting's (``Accept``);
    ``credentials_only`` counts only headers that carry a credential, for refusing a call rather
    than redacting a text. The first source of a value names it."""
    env = os.environ
    found: list[tuple[str | None, str]] = []
    if config is not None:
        found.append((config.api_key, "the model API key"))
        for name, provider in config.model_providers.items():
            found += _headers(provider.http_headers, f"model provider {name!r}'s", credentials_only)
            found.append((env.get(provider.env_key or ""), f"model provider {name!r}'s key ${provider.env_key}"))
            found.append((url_password(provider.base_url), f"the password in model provider {name!r}'s base_url"))
    for name, server in servers.items():
        where = f"MCP server {name!r}'s"
        found += [(value, f"{where} env {key}") for key, value in server.env.items() if names_a_secret(key)]
        found += _handed(server, where, credentials_only)
    found += [(value, f"the environment variable {key}") for key, value in env.items() if names_a_secret(key)]
    found += [(value, what) for value, (what, _) in process_secret_sources().items()]
    sources: dict[str, str] = {}
    for value, what in found:
        if isinstance(value, str) and len(value) >= MIN_SECRET_LEN:
            sources.setdefault(value, what)
    return sources


def _handed(server: McpServerConfig, where: str, credentials_only: bool) -> list[tuple[str | None, str]]:
    """The credentials nbagent sends this server from its config, by what each is: its headers,
    the variables its bearer token and other headers come from, its URL's password, its OAuth
    client's secret. (Its OAuth tokens are process secrets it owns.)"""
    env = os.environ
    found = _headers(server.http_headers, where, credentials_only)
    found.append((url_password(server.url), f"the password in {where} url"))
    found.append((env.get(server.bearer_token_env_var or ""), f"{where} bearer token ${server.bearer_token_env_var}"))
    found += [
        (env.get(var), f"{where} header {key} (${var})")
        for key, var in server.env_http_headers.items()
        if secret_header(key, env.get(var, ""), credentials_only)
    ]
    if server.oauth is not None and (var := server.oauth.client_secret_env_var):
        found.append((env.get(var), f"{where} OAuth client secret ${var}"))
    return found


def _headers(headers: Mapping[str, str], where: str, credentials_only: bool) -> list[tuple[str | None, str]]:
    """Each header value that is a secret (``secret_header``), and the credential of a
    ``Bearer ...`` / ``Basic ...`` one on its own: the token is the secret, with or without the
    scheme in front."""
    found: list[tuple[str | None, str]] = []
    for key, value in headers.items():
        if secret_header(key, value, credentials_only):
            found.append((value, f"{where} header {key}"))
        if (credential := header_credential(value)) is not None:
            found.append((credential, f"{where} header {key}"))
    return found


def owner_of(name: str, url: str | None) -> Hashable:
    """Whose a secret of the process is (``add_process_secret``'s owner): the server of this name
    at this URL (a server that keeps the name but points elsewhere is another). Here, not with the
    OAuth client, so reading secrets never imports it."""
    return ("mcp server", name, url)


def given_secrets(name: str, cfg: McpServerConfig) -> list[str]:
    """What nbagent itself hands this server: its whole environment (a stdio server's allowlist,
    ``env_vars`` and ``env``), its credentials and the OAuth tokens it was issued. Sending it one
    of these again tells it nothing it was not given."""
    values: list[str | None] = list(server_env(cfg).values()) if cfg.transport == "stdio" else []
    values += [value for value, _ in _handed(cfg, "", credentials_only=False)]
    owner = owner_of(name, cfg.url)
    values += [value for value, (_, whose) in process_secret_sources().items() if whose == owner]
    return [value for value in values if value]


def _message(redactor: KeyedRedactor, seq: int, at: float, direction: Direction, data: dict[str, Any] | str) -> WireMessage:
    """One recorded message as ``inspect wire`` shows it, with every secret gone."""
    if isinstance(data, str):  # an exception the transport passed up instead of a message
        return WireMessage(seq=seq, at=at, direction=direction, kind="transport_error", message={"error": redactor.text(data)})
    kind: MessageKind = "error" if "error" in data else "response" if "result" in data else (
        "request" if "id" in data else "notification"
    )
    return WireMessage(
        seq=seq, at=at, direction=direction, kind=kind, method=data.get("method"), id=data.get("id"),
        message=redactor.value(data),
    )


def _dump(item: Any) -> dict[str, Any] | str:
    if isinstance(item, BaseException):
        return f"{type(item).__name__}: {item}"
    return getattr(item, "message", item).model_dump(by_alias=True, exclude_none=True, mode="json")
