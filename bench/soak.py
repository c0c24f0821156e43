"""Soak ``nbagent mcp-server --http``: many ``agent`` calls must not pile up sessions or processes.

The server runs the replay model and one stdio MCP server (the demo server), so every ``agent``
call opens a session that starts a real server process and calls one of its tools. Every 50
calls this prints the resident memory of the nbagent server plus all its descendants and how
many descendants there are; both should stay flat after the first 50.

    .venv/bin/python bench/soak.py                      # 500 calls, a new client per call
    .venv/bin/python bench/soak.py --calls 100 --shared # one client for every call (the cap bounds it)
    .venv/bin/python bench/soak.py --mode 2026-07-28    # stateless clients: the cap bounds it
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import httpx2
import psutil
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "soak-token-0123456789"


def start_server(tmp: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    script = tmp / "script.json"
    script.write_text(json.dumps({"responses": [
        {"tool_calls": [{"name": "mcp__demo__list_notes", "arguments": {}}]}, {"text": "Listed."}]}))
    demo = {"command": sys.executable, "args": ["-m", "nbagent.examples.demo_server", "--dir", str(tmp / "notes")]}
    args = [sys.executable, "-m", "nbagent.server", "--http", "127.0.0.1:0", "--token", TOKEN,
            "--model", f"replay:{script}", "--policy", "full-auto", "-c", f"mcp_servers={json.dumps({'demo': demo})}",
            *extra]
    env = {**os.environ, "NBAGENT_HOME": str(tmp / "home"), "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(args, env=env, cwd=tmp, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    for line in process.stderr:
        if match := re.search(r"listening on (http://\S+)", line):
            return process, match.group(1)
    raise SystemExit("the server did not start: " + (process.stderr.read() if process.stderr else ""))


def footprint(pid: int) -> tuple[float, int]:
    """(RSS in MB of the process and all its descendants, number of live descendants)."""
    root = psutil.Process(pid)
    rss, children = root.memory_info().rss, 0
    for child in root.children(recursive=True):
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                continue
            rss += child.memory_info().rss
            children += 1
        except psutil.NoSuchProcess:
            continue
    return rss / 2**20, children


async def soak(calls: int, every: int, shared: bool, mode: str, extra: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        process, url = start_server(Path(tmp), *extra)
        try:
            async with AsyncExitStack() as stack:
                http = await stack.enter_async_context(
                    httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120))
                one = None
                if shared:
                    one = await stack.enter_async_context(Client(streamable_http_client(url, http_client=http), mode=mode))
                start, first = time.perf_counter(), None
                print(f"{'calls':>6} {'RSS MB':>8} {'children':>8} {'s/call':>7}")
                for n in range(1, calls + 1):
                    if one is not None:
                        result = await one.call_tool("agent", {"prompt": f"call {n}"})
                    else:
                        async with Client(streamable_http_client(url, http_client=http), mode=mode) as c:
                            result = await c.call_tool("agent", {"prompt": f"call {n}"})
                    if result.is_error:
                        raise SystemExit(f"call {n} failed: {result.content}")
                    if n % every == 0 or n == calls:
                        rss, children = footprint(process.pid)
                        first = first or (rss, children)
                        print(f"{n:>6} {rss:>8.1f} {children:>8} {(time.perf_counter() - start) / n:>7.2f}", flush=True)
                rss, children = footprint(process.pid)
                assert first is not None
                print(f"growth after the first {every} calls: RSS x{rss / first[0]:.2f}, children {children - first[1]:+d}")
        finally:
            process.terminate()
            process.wait(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--every", type=int, default=50, help="print the footprint every N calls")
    parser.add_argument("--shared", action="store_true", help="one MCP client for every call")
    parser.add_argument("--mode", default="legacy", choices=["legacy", "2026-07-28"],
                        help="protocol generation: legacy clients have a session that ends at disconnect; "
                             "2026-07-28 is stateless, so the idle timeout and the cap bound it")
    parser.add_argument("server_args", nargs="*", help="extra nbagent mcp-server flags, after --")
    args = parser.parse_args()
    asyncio.run(soak(args.calls, args.every, args.shared, args.mode, args.server_args))


if __name__ == "__main__":
    main()
