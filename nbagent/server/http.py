"""Streamable HTTP for nbagent's servers: a bearer token, Host/Origin checks, loopback only.

The guard runs before the SDK app: a foreign ``Host`` is refused with 421 and a foreign
``Origin`` with 403 (DNS rebinding: a web page must not reach a local agent), then a missing or
wrong token with 401. The SDK's own ``TransportSecuritySettings`` stay on behind it as a second
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
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
MCP_PATH = "/mcp"


def new_token() -> str:
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _hostname(value: str) -> str:
    """``[::1]:8080`` -> ``::1``; ``Localhost:80`` -> ``localhost``."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class Guard:
    """ASGI middleware: Host, then Origin, then the bearer token; anything else never reaches MCP."""

    def __init__(self, app: ASGIApp, token: str, hosts: Iterable[str]) -> None:
        self.app = app
        self.token = token.encode()
        self.hosts = {h.lower() for h in hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if _hostname(host) not in self.hosts:
            await PlainTextResponse("Invalid Host header", status_code=421)(scope, receive, send)
            return
        origin = headers.get("origin")
        if origin is not None:
            parts = urlsplit(origin)
            if parts.scheme not in ("http", "https") or (parts.hostname or "").lower() not in self.hosts:
                await PlainTextResponse("Invalid Origin header", status_code=403)(scope, receive, send)
                return
        auth = headers.get("authorization", "")
        scheme, _, given = auth.partition(" ")
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
    settings = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[p for h in hosts for p in ((f"[{h}]:*", f"[{h}]") if ":" in h else (f"{h}:*", h))],
        allowed_origins=[f"{s}://{f'[{h}]' if ':' in h else h}{p}" for h in hosts for s in ("http", "https")
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
