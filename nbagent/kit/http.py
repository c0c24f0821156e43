"""Streamable HTTP for nbagent's servers: a bearer token, Host/Origin checks, loopback only.

The guard runs before the SDK app: a request without exactly one ``Host`` naming this server
and the port it listens on is refused with 421, one with more than one ``Origin`` or an
``Origin`` that is not a plain ``scheme://host[:port]`` on an allowed host with 403 (DNS
rebinding: a web page must not reach a local agent), then a missing or wrong token with 401.
Values are compared whole, never by a prefix or a lenient parse: ``127.0.0.1:PORT@evil.example``
is not this server. The SDK's own ``TransportSecuritySettings`` stay on behind it as a second
check. Serving uses ``uvicorn.Server.serve()`` on the caller's loop, never ``uvicorn.run``
(which calls ``asyncio.run`` and cannot run inside a Jupyter kernel).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import secrets
import socket
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from mcp.server.lowlevel.server import Server
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from nbagent.textsafe import is_loopback

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
MCP_PATH = "/mcp"
MIN_TOKEN_LEN = 16
"""A chosen token shorter than this is refused: it could be guessed, and it would be too short
for the rollouts to redact (``nbagent.secrets.MIN_SECRET_LEN``)."""


def new_token() -> str:
    return secrets.token_urlsafe(32)


def check_token(token: str, source: str) -> str:
    """A token the user chose, or ``ValueError`` naming ``source`` (never the value)."""
    if len(token) < MIN_TOKEN_LEN:
        raise ValueError(f"the bearer token from {source} has {len(token)} characters; it needs at least "
                         f"{MIN_TOKEN_LEN} characters (leave it out and nbagent generates one)")
    if not (token.isascii() and token.isprintable()) or " " in token:
        raise ValueError(f"the bearer token from {source} must be printable ASCII without spaces")
    return token


def split_host(entry: str) -> tuple[str, int | None]:
    """``NAME``, ``NAME:PORT``, ``[V6]``, ``[V6]:PORT`` or a bare ``V6`` -> (lowercase name, port).

    Raises ``ValueError`` for anything else (userinfo, a path, a bad port).
    """
    entry = entry.strip().lower()
    if entry.count(":") > 1 and not entry.startswith("["):
        ipaddress.IPv6Address(entry)
        return entry, None
    parts = urlsplit("//" + entry)
    if not parts.hostname or "@" in parts.netloc or parts.netloc != entry or parts.path:
        raise ValueError(f"expected HOST or HOST:PORT, got {entry!r}")
    return parts.hostname, parts.port


def _bracketed(name: str) -> str:
    return f"[{name}]" if ":" in name else name


def _header(scope: Scope, name: bytes) -> list[str]:
    """Every value of header ``name``: a repeated header must not hide behind its first copy."""
    return [value.decode("latin-1") for key, value in scope["headers"] if key.lower() == name]


class Guard:
    """ASGI middleware: Host, then Origin, then the bearer token; anything else never reaches MCP."""

    def __init__(self, app: ASGIApp, token: str, hosts: Iterable[str]) -> None:
        self.app = app
        self.token = token.encode()
        self.hosts = [split_host(h) for h in hosts]
        self.names = {name for name, _ in self.hosts}

    def _host_ok(self, values: list[str], scope: Scope) -> bool:
        """Exactly one Host: an allowed name with the port this server listens on (or the one
        an ``--allowed-host NAME:PORT`` gives); no port means the scheme's default."""
        if len(values) != 1:
            return False
        listening = (scope.get("server") or (None, None))[1]
        accepted: set[str] = set()
        for name, fixed in self.hosts:
            port = fixed if fixed is not None else listening
            accepted.add(f"{_bracketed(name)}:{port}")
            if port in (80, 443):
                accepted.add(_bracketed(name))
        return values[0].strip().lower() in accepted

    def _origin_ok(self, values: list[str]) -> bool:
        """No Origin (not a browser), or exactly one: ``http(s)://host[:port]`` on an allowed host."""
        if not values:
            return True
        origin = values[0].strip()
        parts = urlsplit(origin)
        try:
            _ = parts.port  # reading it checks it: a port that is not a number raises
        except ValueError:
            return False
        return (len(values) == 1 and parts.scheme in ("http", "https") and "@" not in parts.netloc
                and origin == f"{parts.scheme}://{parts.netloc}" and (parts.hostname or "") in self.names)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if not self._host_ok(_header(scope, b"host"), scope):
            await PlainTextResponse("Invalid Host header", status_code=421)(scope, receive, send)
            return
        if not self._origin_ok(_header(scope, b"origin")):
            await PlainTextResponse("Invalid Origin header", status_code=403)(scope, receive, send)
            return
        auth = _header(scope, b"authorization")
        scheme, _, given = (auth[0] if len(auth) == 1 else "").partition(" ")
        if scheme.lower() != "bearer" or not secrets.compare_digest(given.strip().encode(), self.token):
            response = PlainTextResponse("A valid bearer token is required", status_code=401,
                                         headers={"WWW-Authenticate": 'Bearer realm="nbagent"'})
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def allowed_hosts(bind_host: str, extra: Iterable[str] = ()) -> list[str]:
    hosts = list(LOOPBACK_NAMES)
    if bind_host not in ("0.0.0.0", "::") and bind_host not in hosts:
        hosts.append(bind_host)
    return hosts + [h for h in extra if h not in hosts]


def http_app(server: Server[Any], token: str, *, bind_host: str = "127.0.0.1",
             extra_hosts: Iterable[str] = ()) -> ASGIApp:
    """The SDK's streamable HTTP app at ``/mcp`` behind the ``Guard``."""
    hosts = allowed_hosts(bind_host, extra_hosts)
    guard_hosts = [split_host(h) for h in hosts]
    settings = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[p for h, port in guard_hosts for p in
                       ((f"{_bracketed(h)}:{port}",) if port else (f"{_bracketed(h)}:*", _bracketed(h)))],
        allowed_origins=[f"{s}://{_bracketed(h)}{p}" for h, _ in guard_hosts for s in ("http", "https")
                         for p in (":*", "")],
    )
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, transport_security=settings, host=bind_host)
    return Guard(app, token, hosts)


def check_bind(host: str, allow_remote: bool) -> None:
    """Loopback only, unless the user said otherwise out loud."""
    if not is_loopback(host) and not allow_remote:
        raise ValueError(f"refusing to listen on {host}: nbagent serves 127.0.0.1 only "
                         "(pass --allow-remote to listen elsewhere, behind your own TLS)")


@dataclass
class HttpHandle:
    """A running server: where it listens, its token, and how to stop it."""

    url: str
    token: str
    host: str
    port: int
    _server: Any = field(repr=False, default=None)
    _task: asyncio.Task[None] | None = field(repr=False, default=None)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 5)
            except (TimeoutError, asyncio.CancelledError, Exception):
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)

    async def wait(self) -> None:
        """Until the server ends; cancelling the waiter leaves the server to :meth:`stop`."""
        if self._task is not None:
            await asyncio.shield(self._task)


async def start_http(app: ASGIApp, *, host: str, port: int, token: str, log_level: str = "warning",
                     signals: bool = False) -> HttpHandle:
    """Serve ``app`` as a task on the running loop; returns once the socket listens.

    ``signals=False`` leaves SIGINT/SIGTERM alone: inside a kernel they belong to the kernel.
    """
    import uvicorn

    class _Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if signals:
                with super().capture_signals():
                    yield
            else:
                yield

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    real_port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level=log_level, lifespan="on", access_log=False)
    server = _Server(config)
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("the HTTP server stopped during startup")
        await asyncio.sleep(0.01)
    shown = f"[{host}]" if ":" in host else host
    return HttpHandle(url=f"http://{shown}:{real_port}{MCP_PATH}", token=token, host=host, port=real_port,
                      _server=server, _task=task)
