"""HTTP refusals: no token, a wrong token, foreign Host/Origin; loopback-only listening."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from nbagent import Session
from nbagent.kit.http import Guard, allowed_hosts, check_bind
from nbagent.kit.notebook_server import start_notebook_server
from tests.server.conftest import HttpServer, ServerEnv, start_http_server

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _post(server: HttpServer, **headers: str) -> httpx.Response:
    return httpx.post(server.url, json=INIT, headers={**ACCEPT, **headers}, timeout=10)


def test_token_required(http_server: HttpServer) -> None:
    missing = _post(http_server)
    assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
    assert _post(http_server, Authorization="Bearer wrong-token").status_code == 401
    assert _post(http_server, Authorization=f"Basic {http_server.token}").status_code == 401
    ok = _post(http_server, Authorization=f"Bearer {http_server.token}")
    assert ok.status_code == 200, ok.text
    assert '"name":"nbagent"' in ok.text.replace(" ", "")


def test_foreign_host_and_origin_refused(http_server: HttpServer) -> None:
    auth = {"Authorization": f"Bearer {http_server.token}"}
    assert _post(http_server, Host="evil.example.com", **auth).status_code == 421
    assert _post(http_server, Origin="http://evil.example.com", **auth).status_code == 403
    assert _post(http_server, Origin="null", **auth).status_code == 403
    # Rebinding is refused before the token is even looked at.
    assert _post(http_server, Host="evil.example.com:80").status_code == 421
    port = urlsplit(http_server.url).port
    assert _post(http_server, Origin=f"http://localhost:{port}", **auth).status_code == 200


def _raw_status(url: str, *headers: str) -> int:
    """The status of an ``initialize`` POST sent byte for byte, so that repeated and odd headers
    reach the server exactly as written (an HTTP client would merge or refuse them)."""
    parts = urlsplit(url)
    body = json.dumps(INIT).encode()
    head = [f"POST {parts.path} HTTP/1.1", *headers, *(f"{k}: {v}" for k, v in ACCEPT.items()),
            f"Content-Length: {len(body)}", "Connection: close"]
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall("\r\n".join(head).encode() + b"\r\n\r\n" + body)
        reply = b""
        while b"\r\n" not in reply and (chunk := sock.recv(4096)):
            reply += chunk
    return int(reply.split(b" ", 2)[1])


def test_host_and_origin_parsed_strictly(http_server: HttpServer) -> None:
    """One Host, exactly this server's address and port; at most one Origin, a loopback URL."""
    port = urlsplit(http_server.url).port
    here = f"Host: 127.0.0.1:{port}"
    refused_host, refused_origin = {421}, {403}
    cases = {
        "exact": ([here, f"Origin: http://localhost:{port}"], {200}),
        "userinfo in Host": ([f"Host: 127.0.0.1:{port}@evil.example"], refused_host),
        "two Hosts": ([here, "Host: evil.example"], {400, 421}),  # h11 itself refuses it with 400
        "another port": (["Host: 127.0.0.1:1"], refused_host),
        "no port": (["Host: localhost"], refused_host),
        "two Origins": ([here, f"Origin: http://127.0.0.1:{port}", "Origin: http://evil.example"], refused_origin),
        "userinfo in Origin": ([here, f"Origin: http://evil.example@127.0.0.1:{port}"], refused_origin),
        "Origin with a path": ([here, f"Origin: http://127.0.0.1:{port}/x"], refused_origin),
    }
    auth = f"Authorization: Bearer {http_server.token}"
    got = {name: _raw_status(http_server.url, auth, *headers) for name, (headers, _) in cases.items()}
    assert {name: status for name, status in got.items() if status not in cases[name][1]} == {}


@pytest.mark.parametrize("how", ["flag", "env"])
def test_short_token_refused(senv: ServerEnv, how: str) -> None:
    short = "abc1234"
    args, env = [sys.executable, "-m", "nbagent.server", "--http", "127.0.0.1:0"], senv.env()
    if how == "flag":
        args += ["--token", short]
    else:
        env["NBAGENT_SERVER_TOKEN"] = short
    done = subprocess.run(args, env=env, cwd=senv.work, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "at least 16 characters" in done.stderr and short not in done.stderr
    assert ("--token" if how == "flag" else "$NBAGENT_SERVER_TOKEN") in done.stderr


def _listeners(port: int) -> list[str]:
    """Addresses listening on ``port``, from /proc/net/tcp{,6} (no ss/netstat needed)."""
    found = []
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(name).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:
                raw = bytes.fromhex(address)
                if len(raw) == 4:
                    found.append(socket.inet_ntop(socket.AF_INET, raw[::-1]))
                else:
                    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                    found.append(socket.inet_ntop(socket.AF_INET6, words))
    return found


def test_listens_on_loopback_only(http_server: HttpServer) -> None:
    port = urlsplit(http_server.url).port
    assert urlsplit(http_server.url).hostname == "127.0.0.1"
    assert _listeners(port) == ["127.0.0.1"]
    # Not reachable on another local address of this machine.
    others = {info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
    for address in others - {"127.0.0.1"}:
        with socket.socket() as s:
            s.settimeout(1)
            assert s.connect_ex((address, port)) != 0


def test_generated_token_is_printed(senv: ServerEnv) -> None:
    server = start_http_server(senv, token=None)
    try:
        assert len(server.token) >= 32
        assert _post(server, Authorization=f"Bearer {server.token}").status_code == 200
    finally:
        server.process.terminate()
        server.process.wait(10)


def test_refuses_public_bind(senv: ServerEnv) -> None:
    done = subprocess.run([sys.executable, "-m", "nbagent.server", "--http", "0.0.0.0:0"], env=senv.env(),
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "refusing to listen on 0.0.0.0" in done.stderr
    with pytest.raises(ValueError):
        check_bind("192.168.1.5", False)
    check_bind("::1", False)
    check_bind("0.0.0.0", True)


async def test_guard_unit() -> None:
    calls: list[str] = []

    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        calls.append(scope["path"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    guard = Guard(app, "tok", allowed_hosts("127.0.0.1"))
    transport = httpx.ASGITransport(app=guard)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:9") as client:
        assert (await client.get("/mcp", headers={"Authorization": "Bearer tok"})).status_code == 204
        assert (await client.get("/mcp", headers={"Authorization": "Bearer tok", "Host": "[::1]:9"})).status_code == 204
        assert (await client.get("/mcp", headers={"Authorization": "Bearer tok", "Host": "127.0.0.1.evil.com"})).status_code == 421
        assert (await client.get("/mcp", headers={"Authorization": "Bearer tokx"})).status_code == 401
    assert calls == ["/mcp", "/mcp"]


async def test_notebook_server_refuses_a_short_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    async with Session(model="replay:" + str(tmp_path / "none.json"), policy="on-request") as session:
        with pytest.raises(ValueError, match="at least 16 characters"):
            await start_notebook_server(session, token="abc1234")
