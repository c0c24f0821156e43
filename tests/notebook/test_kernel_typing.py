"""Typed input reaches the kernel whole, in every cell mode, through a real kernel.

The ipywidgets front end sends one state update per widget at a time and holds every later
keystroke until the kernel publishes ``status: idle`` with the previous update as parent. These
tests type the way it does (one ``update`` per key, the next only after that idle) into the
deny-reason box, the arguments editor and the elicitation form, in a ``%%agent --wait`` cell, a
background cell and the serving cell of ``%agent serve``, and check what the kernel applied
(its ``echo_update`` for each key), what it reported, what the MCP server ran and what the
model was told.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.notebook.harness import Kernel, Widget, executions, fill_experiment, outputs_of
from tests.notebook.test_kernel_serve import in_thread

pytestmark = pytest.mark.timeout(240)

WRITE = {"name": "mcp__demo__write_note", "arguments": {"name": "hello", "text": "hi there"}}
LOG = {"name": "mcp__demo__log_experiment", "arguments": {"name": "e1"}}
REASON = "please do not write anything today"
IDLE_WAIT = 20.0
SLOW = 120  # seconds: the session, its MCP server and the first model turn start on a busy machine


def _status(kernel: Kernel, parent: str, state: str) -> bool:
    return any(
        m["header"]["msg_type"] == "status"
        and m["parent_header"].get("msg_id") == parent
        and m["content"]["execution_state"] == state
        for m in kernel.iopub
    )


def type_into(kernel: Kernel, widget: Widget, text: str) -> list[str]:
    """Type ``text`` key by key as the ipywidgets front end sends it; the update ids, in order.

    Fails at the first key whose ``idle`` never comes: the browser would keep every later key.
    """
    sent = []
    for n in range(1, len(text) + 1):
        msg = kernel.kc.session.msg(
            "comm_msg",
            {"comm_id": widget.comm_id, "data": {"method": "update", "state": {"value": text[:n]}, "buffer_paths": []}},
        )
        kernel.kc.shell_channel.send(msg)
        msg_id = msg["header"]["msg_id"]
        sent.append(msg_id)
        deadline = time.monotonic() + IDLE_WAIT
        while not _status(kernel, msg_id, "idle"):
            assert time.monotonic() < deadline, (
                f"no idle status for the update {text[:n]!r} within {IDLE_WAIT:.0f} s: "
                f"a browser would hold {text[n:]!r} back forever"
            )
            kernel.pump(0.02)
    widget.state["value"] = text
    return sent


def assert_each_key_applied(kernel: Kernel, sent: list[str], text: str) -> None:
    """The kernel echoed every update with its value, and reported busy then idle for it."""
    for n, msg_id in enumerate(sent, start=1):
        echoes = [
            m["content"]["data"]["state"].get("value")
            for m in kernel.iopub
            if m["header"]["msg_type"] == "comm_msg"
            and m["parent_header"].get("msg_id") == msg_id
            and m["content"]["data"].get("method") == "echo_update"
        ]
        assert echoes == [text[:n]], (text[:n], echoes)
        assert _status(kernel, msg_id, "busy") and _status(kernel, msg_id, "idle")


def assert_indicator_true(kernel: Kernel, cell: str) -> None:
    """What a kernel indicator shows (the last status, whatever its parent) is busy whenever the
    cell is still running, and idle once it ended."""
    statuses = [m for m in kernel.iopub if m["header"]["msg_type"] == "status"]
    end = next(i for i, m in enumerate(statuses) if m["parent_header"].get("msg_id") == cell
               and m["content"]["execution_state"] == "idle")
    during = statuses[:end]
    start = next(i for i, m in enumerate(during) if m["parent_header"].get("msg_id") == cell)
    for i in range(start, len(during)):
        m = during[i]
        if m["content"]["execution_state"] == "idle":
            after = during[i + 1] if i + 1 < len(during) else None
            assert after is not None and after["content"]["execution_state"] == "busy", (
                "the kernel looked idle while the cell was still running"
            )
    assert statuses[-1]["content"]["execution_state"] == "idle"


def told_the_model(kernel: Kernel) -> list[str]:
    return [o["output"] for o in outputs_of(kernel)]


def test_a_typed_deny_reason_arrives_whole_in_a_wait_cell(make_kernel):
    kernel, record = make_kernel({"text": "Writing.", "tool_calls": [WRITE]}, {"text": "Not written."})
    cell = kernel.execute("%%agent --wait\nWrite a hello note", wait=False)
    reason = kernel.wait_for("TextModel", description="deny reason", timeout=SLOW)
    sent = type_into(kernel, reason, REASON)
    kernel.click(kernel.wait_for("ButtonModel", description="Deny", timeout=SLOW))
    assert kernel.reply(cell["msg_id"], SLOW)["content"]["status"] == "ok"
    assert_each_key_applied(kernel, sent, REASON)
    assert_indicator_true(kernel, cell["msg_id"])
    assert executions(record) == []
    (told,) = told_the_model(kernel)
    assert REASON in told, told


def test_typed_arguments_are_what_runs_in_a_wait_cell(make_kernel):
    kernel, record = make_kernel({"text": "Writing.", "tool_calls": [WRITE]}, {"text": "Written."})
    cell = kernel.execute("%%agent --wait\nWrite a hello note", wait=False)
    editor = kernel.wait_for("TextareaModel", description="arguments", timeout=SLOW)
    edited = '{"name": "typed", "text": "every key arrived"}'
    sent = type_into(kernel, editor, edited)
    kernel.click(kernel.wait_for("ButtonModel", description="Approve", timeout=SLOW))
    assert kernel.reply(cell["msg_id"], SLOW)["content"]["status"] == "ok"
    assert_each_key_applied(kernel, sent, edited)
    assert [(e["tool"], e["arguments"]) for e in executions(record)] == [("write_note", json.loads(edited))]
    (told,) = told_the_model(kernel)
    assert "wrote typed.md" in told, told


def type_checked(kernel: Kernel) -> Callable[[Widget, str], None]:
    """Type into a widget key by key and check that the kernel applied every key."""
    return lambda widget, text: assert_each_key_applied(kernel, type_into(kernel, widget, text), text)


def test_a_typed_form_is_accepted_whole_in_a_wait_cell(make_kernel):
    extra = "[mcp_servers.demo.tools.log_experiment]\napproval_mode = \"approve\"\n"
    kernel, record = make_kernel({"text": "Logging.", "tool_calls": [LOG]}, {"text": "Logged."}, extra=extra)
    cell = kernel.execute("%%agent --wait\nLog experiment e1", wait=False)
    accept = kernel.wait_for("ButtonModel", description="Accept", timeout=SLOW)
    expected = fill_experiment(kernel, type_checked(kernel))
    errors = [w.state.get("value", "") for w in kernel.find("HTMLModel") if "not an email" in w.state.get("value", "")
              or "at least 3" in w.state.get("value", "")]
    assert errors == [], "a field still shows a problem its typed value does not have"
    kernel.click(accept)
    assert kernel.reply(cell["msg_id"], SLOW)["content"]["status"] == "ok"
    assert_indicator_true(kernel, cell["msg_id"])
    (run,) = executions(record)
    assert run["content"] == expected
    (told,) = told_the_model(kernel)
    assert "you@example.com" in told and "Baseline run" in told, told


def test_a_typed_deny_reason_arrives_whole_in_a_background_cell(make_kernel):
    kernel, record = make_kernel({"text": "Writing.", "tool_calls": [WRITE]}, {"text": "Not written."})
    kernel.run("%%agent\nWrite a hello note")
    reason = kernel.wait_for("TextModel", description="deny reason", timeout=SLOW)
    sent = type_into(kernel, reason, REASON)
    kernel.click(kernel.wait_for("ButtonModel", description="Deny", timeout=SLOW))
    deadline = time.monotonic() + SLOW
    while not outputs_of(kernel):
        assert time.monotonic() < deadline, "the background turn did not go on after the decision"
        kernel.pump(0.2)
    assert_each_key_applied(kernel, sent, REASON)
    assert executions(record) == []
    (told,) = told_the_model(kernel)
    assert REASON in told, told


async def _outside_write(url: str, token: str) -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as hc:
        async with Client(streamable_http_client(url, http_client=hc)) as client:
            return await client.call_tool("mcp__demo__write_note", {"name": "outside", "text": "from outside"})


def test_a_typed_deny_reason_reaches_an_outside_agent_through_serve(make_kernel):
    kernel, record = make_kernel({"text": "unused"})
    msg_id, _ = kernel.run("%agent serve")
    text = kernel.wait_output(msg_id, "Stop with: %agent serve --stop", timeout=SLOW)
    url = re.search(r"at (http://127\.0\.0\.1:\d+/mcp)", text).group(1)  # type: ignore[union-attr]
    token_file = re.search(r'export NBAGENT_NOTEBOOK_TOKEN="\$\(cat (\S+)\)"', text).group(1)  # type: ignore[union-attr]
    result = in_thread(_outside_write(url, Path(token_file).read_text()))
    reason = kernel.wait_for("TextModel", description="deny reason", timeout=SLOW)
    sent = type_into(kernel, reason, REASON)
    kernel.click(kernel.wait_for("ButtonModel", description="Deny", timeout=SLOW))
    got = result.result(timeout=SLOW)
    assert_each_key_applied(kernel, sent, REASON)
    assert executions(record) == []
    assert got.is_error and REASON in got.content[0].text, got
    kernel.run("%agent serve --stop")
