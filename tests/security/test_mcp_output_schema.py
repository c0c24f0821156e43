"""A server's ``outputSchema`` is untrusted: checking a result against it never freezes the event
loop (a backtracking ``pattern``), never fetches a ``$ref`` URL, and still refuses a result that
does not conform or omits its structured content. Driven through the real connection manager
against tests/servers/hostile_output.py, in a child process so a regression fails, not hangs."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.mcp.conftest import SERVERS

CHILD = textwrap.dedent("""
    import asyncio, json, sys, tempfile
    from pathlib import Path
    from nbagent.config import McpServerConfig
    from nbagent.mcp.manager import McpConnectionManager
    from nbagent.protocol import CallInfo

    async def main():
        cfg = McpServerConfig(command=sys.executable, args=[sys.argv[1]], env={"HOSTILE_REF_URL": sys.argv[2]},
                              tool_timeout_sec=30)
        out = {}
        with tempfile.TemporaryDirectory() as logs:
            manager = McpConnectionManager({"h": cfg}, on_event=lambda e: None, on_elicit=None, log_dir=Path(logs))
            await manager.start()
            try:
                for spec in manager.list_tools():
                    result = await manager.call_tool(spec, {}, CallInfo(thread_id="t", turn_id="u", call_id="c"))
                    text = " ".join(getattr(b, "text", "") for b in result.content)
                    out[spec.raw_name] = {"error": result.is_error, "text": text}
            finally:
                await manager.aclose()
        print(json.dumps(out), flush=True)

    asyncio.run(main())
""")


def test_hostile_output_schemas_cannot_hang_fetch_or_slip_through(tmp_path: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/schema.json"
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, str(SERVERS / "hostile_output.py"), url],
                              capture_output=True, text=True, timeout=60, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        raise AssertionError("checking a result against a hostile outputSchema hung the event loop") from None
    try:
        listener.accept()
        fetched = True
    except BlockingIOError:
        fetched = False
    finally:
        listener.close()
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert not fetched, "a $ref in an outputSchema made nbagent fetch a URL"
    assert set(seen) == {"backtrack", "remote_ref", "lying", "missing"}
    # The pattern ran on an engine with bounded backtracking: the call ends, refused as not conforming.
    assert seen["backtrack"]["error"] and "does not match" in seen["backtrack"]["text"], seen
    assert seen["remote_ref"]["error"] and "Invalid schema" in seen["remote_ref"]["text"]
    assert seen["lying"]["error"] and "Invalid structured content" in seen["lying"]["text"]
    assert seen["missing"]["error"] and "did not return structured content" in seen["missing"]["text"]
