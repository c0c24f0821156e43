"""run_python from a background turn on a real kernel's event loop (through jupyter_client).

The turn is an asyncio task started by a cell that returns at once, as ``%%agent`` does; the
tool must finish without the cell waiting, and what it captures must not leak into cells.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.kernels import running_kernel

START_TURN = '''
import asyncio
from nbagent.protocol import CallInfo
from nbagent.tools.python import PythonTools

_results = {}
async def _turn(tools, codes):
    spec = tools.list_tools()[0]
    call = CallInfo(thread_id="thr", turn_id="turn", call_id="call")
    for key, code in codes:
        r = await tools.call_tool(spec, {"code": code}, call)
        _results[key] = {"is_error": r.is_error, **r.structured}
    _results["done"] = True

_codes = [
    ("print", "print('hello from run_python')"),
    ("value", "answer = 6 * 7\\nanswer"),
    ("raise", "def boom():\\n    raise ValueError('no good')\\nboom()"),
    ("async", "import asyncio\\nawait asyncio.sleep(0.3)\\nprint('after sleep')\\nanswer + 1"),
]
_task = asyncio.ensure_future(_turn(PythonTools(in_thread=IN_THREAD), _codes))
print("cell returned")
'''

COLLECT = '''
import asyncio, json
for _ in range(200):
    if _results.get("done"):
        break
    await asyncio.sleep(0.05)
print(json.dumps(_results))
'''


@pytest.fixture(scope="module")
def kernel() -> Iterator[Any]:
    with running_kernel() as client:
        yield client


def execute(client: Any, code: str, timeout: float = 30) -> tuple[str, str]:
    """Run a cell; return (its stdout, its execute_reply status)."""
    msg_id = client.execute(code)
    stdout = []
    deadline = time.monotonic() + timeout
    while True:
        msg = client.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
            stdout.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            raise AssertionError("\n".join(msg["content"]["traceback"]))
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    reply = client.get_shell_msg(timeout=timeout)
    return "".join(stdout), reply["content"]["status"]


@pytest.mark.parametrize("in_thread", [False, True], ids=["on-loop", "in-thread"])
def test_run_python_from_a_background_turn_returns_prints_values_and_exceptions(kernel: Any, in_thread: bool) -> None:
    started = time.monotonic()
    out, status = execute(kernel, START_TURN.replace("IN_THREAD", str(in_thread)))
    assert status == "ok" and out == "cell returned\n"  # the turn's output is captured, not the cell's
    # Another cell runs while the turn is awaiting inside run_python (no deadlock, no capture).
    out, status = execute(kernel, "print('another cell')")
    assert out == "another cell\n"
    out, _ = execute(kernel, COLLECT)
    results = json.loads(out)
    assert time.monotonic() - started < 20
    assert results["print"] == {"is_error": False, "stdout": "hello from run_python\n", "stderr": "", "result": None, "error": None}
    assert results["value"]["result"] == "42" and results["value"]["stdout"] == ""
    assert results["raise"]["is_error"] is True
    assert results["raise"]["error"].rstrip().endswith("ValueError: no good")
    assert "boom()" in results["raise"]["error"]
    assert results["async"] == {"is_error": False, "stdout": "after sleep\n", "stderr": "", "result": "43", "error": None}
    # The variables it made live in the user namespace.
    out, _ = execute(kernel, "print(answer)")
    assert out == "42\n"
