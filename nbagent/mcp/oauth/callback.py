"""The loopback redirect target of a login (RFC 8252 §7.3): one HTTP listener on 127.0.0.1.

It answers only ``GET /callback`` addressed to it (one ``Host``, ``127.0.0.1:PORT`` or
``localhost:PORT``: a page another site's DNS points here is not) carrying the ``state`` of the
authorization link it was opened for; anything else (another path, another state, a probe from
another local process) gets an error page and changes nothing, so no one but the authorization
server's redirect can complete the login.
"""

from __future__ import annotations

import asyncio
import html
import io
import socket
from contextlib import suppress
from http.client import HTTPException, parse_headers
from urllib.parse import parse_qs, urlsplit

from mcp.client.auth import OAuthFlowError
from mcp.shared.auth import AuthorizationCodeResult

HOST = "127.0.0.1"
PATH = "/callback"
MAX_REQUEST_BYTES = 16_384


def free_port() -> int:
    """An ephemeral port, chosen before registration because the redirect URI names it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def redirect_uri(port: int) -> str:
    return f"http://{HOST}:{port}{PATH}"


def _page(status: str, message: str) -> bytes:
    body = f"<!doctype html><title>nbagent</title><p>{html.escape(message)}</p>".encode()
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


class LoopbackCallback:
    """Listens for the redirect of one authorization link; :meth:`wait` returns its code."""

    def __init__(self, port: int, server: str) -> None:
        self.port = port
        self.server_name = server
        self._state: str | None = None
        self._result: asyncio.Future[AuthorizationCodeResult] | None = None
        self._listener: asyncio.Server | None = None

    @property
    def redirect_uri(self) -> str:
        return redirect_uri(self.port)

    async def expect(self, authorization_url: str) -> None:
        """Start listening for the redirect of ``authorization_url`` (its ``state``)."""
        state = parse_qs(urlsplit(authorization_url).query).get("state", [None])[0]
        if not state:
            raise OAuthFlowError("the authorization link carries no state")
        self._state = state
        self._result = asyncio.get_running_loop().create_future()
        if self._listener is None:
            try:
                self._listener = await asyncio.start_server(self._serve, HOST, self.port)
            except OSError as exc:
                raise OAuthFlowError(
                    f"MCP server {self.server_name!r}: cannot listen for the login callback on {HOST}:{self.port} "
                    f"({exc.strerror or exc}); set mcp_oauth_callback_port to a free port"
                ) from None

    async def wait(self) -> AuthorizationCodeResult:
        """The code the authorization server redirected with; raises when it sent an error."""
        if self._result is None:
            raise OAuthFlowError("no login is waiting for a callback")
        try:
            return await self._result
        finally:
            await self.close()

    async def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
            with suppress(Exception):
                await listener.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=10)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            writer.close()
            return
        try:
            writer.write(self._answer(head[:MAX_REQUEST_BYTES].decode("latin-1")))
            await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    def _addressed_here(self, header_lines: str) -> bool:
        """Exactly one ``Host``, and it is this listener's own address."""
        try:
            hosts = parse_headers(io.BytesIO(header_lines.encode("latin-1"))).get_all("Host") or []
        except HTTPException:
            return False
        return len(hosts) == 1 and hosts[0].strip().lower() in (f"{HOST}:{self.port}", f"localhost:{self.port}")

    def _answer(self, head: str) -> bytes:
        request_line, _, header_lines = head.partition("\r\n")
        method, _, rest = request_line.partition(" ")
        target = rest.split(" ", 1)[0]
        parts = urlsplit(target)
        if method != "GET" or parts.path != PATH:
            return _page("404 Not Found", "Not found.")
        if not self._addressed_here(header_lines):
            return _page("421 Misdirected Request", "This request is not addressed to nbagent's sign-in callback.")
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        waiting = self._result
        if waiting is None or waiting.done() or query.get("state") != self._state:
            return _page("400 Bad Request", "This sign-in link is not the one nbagent is waiting for.")
        if "error" in query:
            reason = query.get("error_description") or query["error"]
            waiting.set_exception(OAuthFlowError(f"MCP server {self.server_name!r}: sign-in refused: {reason}"))
            return _page("200 OK", f"Sign-in to {self.server_name} was refused: {reason}")
        if not query.get("code"):
            return _page("400 Bad Request", "The redirect carries no authorization code.")
        waiting.set_result(AuthorizationCodeResult(code=query["code"], state=query["state"], iss=query.get("iss")))
        return _page("200 OK", f"Signed in to {self.server_name}. You can close this tab.")
