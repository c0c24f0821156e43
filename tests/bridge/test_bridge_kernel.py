"""On a real kernel with no front end (as under nbclient): the bridge finds the extension absent
within the hello timeout, caches that, and the notebook tools fall back as documented."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.kernels import running_kernel

SETUP = """
import time, json, asyncio
from nbagent.notebook.bridge import get_bridge
from nbagent.protocol import CallInfo
from nbagent.tools.notebook import NotebookTools
_call = CallInfo(thread_id="thr", turn_id="turn", call_id="call")
_tools = NotebookTools(get_bridge())
_insert = next(s for s in _tools.list_tools() if s.name == "insert_cell")
"""

PROBE = """
_t = time.monotonic(); _first = await get_bridge().available(); _t1 = time.monotonic() - _t
_t = time.monotonic(); _second = await get_bridge().available(); _t2 = time.monotonic() - _t
print(json.dumps([_first, _t1, _second, _t2]))
"""

AWAITED = """
with _tools.awaited():
    _r = await _tools.call_tool(_insert, {"source": "print('queued by set_next_input')"}, _call)
print(json.dumps(_r.structured))
"""

BACKGROUND = """
async def _turn():
    global _bg
    _bg = await _tools.call_tool(_insert, {"source": "x = 'shown, not written'"}, _call)
_task = asyncio.ensure_future(_turn())
"""


@pytest.fixture(scope="module")
def kernel() -> Iterator[Any]:
    with running_kernel() as client:
        yield client


def execute(client: Any, code: str, *, linger: float = 0.0) -> tuple[list[dict], dict]:
    """Run a cell; return its iopub messages (until idle, plus ``linger`` seconds) and its reply."""
    msg_id = client.execute(code)
    messages: list[dict] = []
    idle_at = None
    while True:
        timeout = 30 if idle_at is None else max(0.05, idle_at + linger - time.monotonic())
        try:
            msg = client.get_iopub_msg(timeout=timeout)
        except Exception:
            break
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "error":
            raise AssertionError("\n".join(msg["content"]["traceback"]))
        messages.append(msg)
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            idle_at = time.monotonic()
            if not linger:
                break
    return messages, reply_to(client, msg_id)


def reply_to(client: Any, msg_id: str, timeout: float = 30) -> dict:
    """The shell reply to ``msg_id``. Not simply the next shell message: ``wait_for_ready`` sends
    another ``kernel_info_request`` each second the kernel is slow to answer, and the extra
    replies wait on the shell channel, where they would be taken for the cell's reply."""
    deadline = time.monotonic() + timeout
    while True:
        reply = client.get_shell_msg(timeout=max(0.01, deadline - time.monotonic()))
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply


def stdout(messages: list[dict]) -> str:
    return "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")


def test_no_front_end_is_detected_within_the_hello_timeout_and_cached(kernel: Any) -> None:
    execute(kernel, SETUP)
    messages, _ = execute(kernel, PROBE)
    first, t1, second, t2 = json.loads(stdout(messages))
    assert first is False and 1.5 < t1 < 3.5
    assert second is False and t2 < 0.05


def test_an_awaited_turn_without_the_extension_inserts_through_set_next_input(kernel: Any) -> None:
    execute(kernel, SETUP)
    messages, reply = execute(kernel, AWAITED)
    assert json.loads(stdout(messages)) == {"status": "set_next_input", "combined": 1}
    payloads = reply["content"]["payload"]
    assert payloads == [{"source": "set_next_input", "text": "print('queued by set_next_input')", "replace": False}]


def test_a_background_turn_without_the_extension_shows_the_code_in_its_cell(kernel: Any) -> None:
    execute(kernel, SETUP)
    messages, reply = execute(kernel, BACKGROUND, linger=3.5)  # covers a first, uncached hello
    assert reply["content"]["payload"] == []
    shown = [m["content"]["data"] for m in messages if m["msg_type"] == "display_data"]
    assert len(shown) == 1 and "could not write to the notebook" in shown[0]["text/markdown"]
    assert "x = 'shown, not written'" in shown[0]["text/markdown"]
    messages, _ = execute(kernel, "print(json.dumps(_bg.structured))")
    assert json.loads(stdout(messages)) == {"status": "shown"}
