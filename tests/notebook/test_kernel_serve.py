"""``%agent serve`` in a real kernel: an outside agent (the real MCP SDK client over streamable
HTTP, with the printed token) lists the notebook session's tools and calls them; a call that
needs approval waits for the panel in the serving cell, approved by a click over comm."""

from __future__ import annotations

import asyncio
import re
import socket
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.notebook.harness import executions

pytestmark = pytest.mark.timeout(180)


def in_thread(coro: Any) -> Future[Any]:
    """Run an outside agent's coroutine on its own loop, so this thread can keep clicking."""
    future: Future[Any] = Future()

    def run() -> None:
        try:
            future.set_result(asyncio.run(coro))
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            future.set_exception(exc)

    threading.Thread(target=run, daemon=True).start()
    return future


async def outside_agent(url: str, token: str) -> dict[str, Any]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as hc:
        async with Client(streamable_http_client(url, http_client=hc)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            listed = await client.call_tool("mcp__demo__list_notes", {})
            written = await client.call_tool("mcp__demo__write_note", {"name": "outside", "text": "from outside"})
            return {"tools": tools, "listed": listed, "written": written}


def refused(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        try:
            sock.connect(("127.0.0.1", port))
        except ConnectionRefusedError:
            return True
        return False


def test_outside_agent_lists_and_calls_tools_and_waits_for_the_panel(make_kernel):
    kernel, record = make_kernel({"text": "unused"}, extra="trusted = true\n")  # demo's read-only hints count
    msg_id, _ = kernel.run("%agent serve")
    text = kernel.wait_output(msg_id, "Stop with: %agent serve --stop")
    url = re.search(r"at (http://127\.0\.0\.1:\d+/mcp)", text).group(1)  # type: ignore[union-attr]
    token_file = re.search(r'export NBAGENT_NOTEBOOK_TOKEN="\$\(cat (\S+)\)"', text).group(1)  # type: ignore[union-attr]
    token = Path(token_file).read_text()
    assert token not in text  # never in the cell's output, which the notebook saves
    assert Path(token_file).stat().st_mode & 0o077 == 0
    port = int(url.rsplit(":", 1)[1].split("/")[0])

    result = in_thread(outside_agent(url, token))
    approve = kernel.wait_for("ButtonModel", description="Approve")  # the panel, in the serving cell
    assert [e["tool"] for e in executions(record)] == ["list_notes"]  # the write waits for the click
    kernel.click(approve)
    got = result.result(timeout=60)

    names = set(got["tools"])
    assert {"mcp__demo__list_notes", "mcp__demo__write_note", "mcp__demo__log_experiment"} <= names
    assert {"read_notebook", "insert_cell", "run_python"} <= names  # native tools, no mcp__ prefix
    assert got["tools"]["mcp__demo__write_note"].annotations.destructive_hint is True
    assert not got["listed"].is_error and got["listed"].content[0].text == "(no notes yet)"
    assert not got["written"].is_error and "wrote outside.md" in got["written"].content[0].text
    assert [(e["tool"], e["arguments"]) for e in executions(record)] == [
        ("list_notes", {}), ("write_note", {"name": "outside", "text": "from outside"}),
    ]
    kernel.pump(0.3)
    cards = [w.state.get("value", "") for w in kernel.find("HTMLModel")]
    assert any("Write a note" in v and "done" in v for v in cards)  # its tool card, completed
    assert any("approved once" in v for v in cards)
    assert kernel.find("ButtonModel", description="Approve")[-1].state.get("disabled") is True

    _, stopped = kernel.run("%agent serve --stop")
    assert "stopped serving" in stopped
    deadline = time.monotonic() + 10
    while not refused(port):
        assert time.monotonic() < deadline, "the port still accepts connections after --stop"
        kernel.pump(0.1)
    assert not Path(token_file).exists()
    _, again = kernel.run("%agent serve --stop")
    assert "not serving" in again


def test_serve_bad_arguments_print_usage(make_kernel):
    kernel, _ = make_kernel({"text": "unused"})
    for line in ("%agent serve --port", "%agent serve --port abc", "%agent serve now"):
        _, out = kernel.run(line)
        assert "usage: %agent" in out and "Traceback" not in out, (line, out)


async def outside_write(url: str, token: str) -> Any:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as hc:
        async with Client(streamable_http_client(url, http_client=hc)) as client:
            return await client.call_tool("mcp__demo__write_note", {"name": "outside", "text": "from outside"})


def test_without_a_notebook_ui_a_call_that_needs_approval_ends_at_once_saying_why(make_kernel):
    """A kernel driven without a notebook UI (jupyter_client, no ``cellId``) renders no approval
    panel: an outside call that needs one is settled at once as nobody can answer, and the
    outside agent reads why; nothing runs. (It used to wait for a click that could never come.)"""
    kernel, record = make_kernel({"text": "unused"})
    msg_id, _ = kernel.run("%agent serve", ui=False)
    text = kernel.wait_output(msg_id, "Stop with: %agent serve --stop")
    assert "No notebook UI detected" in text, text  # the serving cell says so up front
    url = re.search(r"at (http://127\.0\.0\.1:\d+/mcp)", text).group(1)  # type: ignore[union-attr]
    token_file = re.search(r'export NBAGENT_NOTEBOOK_TOKEN="\$\(cat (\S+)\)"', text).group(1)  # type: ignore[union-attr]
    written = in_thread(outside_write(url, Path(token_file).read_text())).result(timeout=60)
    assert written.is_error, written
    said = written.content[0].text
    assert "needs approval" in said and "no front end is attached to ask" in said, said
    assert [e["tool"] for e in executions(record)] == []
    kernel.run("%agent serve --stop", ui=False)
