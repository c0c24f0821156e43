"""run_python in process: output capture, results, exceptions, and what it must not capture."""

from __future__ import annotations

import asyncio
import re
import sys
import threading

from nbagent.core.approval import ask_reason
from nbagent.protocol import CallInfo
from nbagent.tools.python import PythonTools, run_python

CALL = CallInfo(thread_id="t", turn_id="u", call_id="c")


async def test_prints_values_and_exceptions_come_back_as_text_and_structure() -> None:
    tools = PythonTools(namespace={})
    spec = tools.list_tools()[0]
    printed = await tools.call_tool(spec, {"code": "import sys\nprint('out')\nprint('err', file=sys.stderr)"}, CALL)
    assert printed.content[0].text == "stdout:\nout\n\nstderr:\nerr\n" and not printed.is_error
    value = await tools.call_tool(spec, {"code": "x = 20\nx * 2 + 2"}, CALL)
    assert value.structured == {"stdout": "", "stderr": "", "result": "42", "error": None}
    raised = await tools.call_tool(spec, {"code": "def f():\n    raise KeyError('k')\nf()"}, CALL)
    assert raised.is_error
    assert re.sub(r"run_python-\d+", "run_python-N", raised.structured["error"]).splitlines() == [
        "Traceback (most recent call last):",
        '  File "<run_python-N>", line 3, in <module>',
        "    f()",
        '  File "<run_python-N>", line 2, in f',
        "    raise KeyError('k')",
        "KeyError: 'k'",
    ]
    assert "nbagent" not in raised.structured["error"]  # our own frames are cut


async def test_variables_persist_in_the_namespace_and_none_is_no_result() -> None:
    ns: dict = {}
    assert (await run_python("a = [1, 2]", ns)).result is None
    assert (await run_python("a.append(3)\na", ns)).result == "[1, 2, 3]"
    assert (await run_python("None", ns)).to_text() == "(no output, no result)"


async def test_syntax_errors_and_system_exit_are_results_not_crashes() -> None:
    ns: dict = {}
    bad = await run_python("def (", ns)
    assert bad.error is not None and bad.error.rstrip().endswith("SyntaxError: invalid syntax")
    assert "ast.py" not in bad.error
    exited = await run_python("raise SystemExit(3)", ns)
    assert exited.error_name == "SystemExit"


async def test_top_level_await_runs_on_the_loop_and_other_tasks_output_is_not_captured() -> None:
    inside, released = asyncio.Event(), asyncio.Event()
    ns: dict = {"inside": inside, "released": released}
    real_stdout = sys.stdout
    seen: list[str] = []

    class Sink:
        def write(self, text: str) -> int:
            seen.append(text)
            return len(text)

        def flush(self) -> None:
            pass

    sys.stdout = Sink()  # type: ignore[assignment]
    try:
        async def other_cell() -> None:
            await inside.wait()  # the code is awaiting, its capture in place
            print("from another cell")
            released.set()

        other = asyncio.ensure_future(other_cell())
        run = await run_python("print('before')\ninside.set()\nawait released.wait()\nprint('after')\n'done'", ns)
        await other
    finally:
        sys.stdout = real_stdout
    assert run.stdout == "before\nafter\n" and run.result == "'done'"
    assert "".join(seen) == "from another cell\n"


async def test_in_thread_mode_captures_too_and_leaves_the_loop_free() -> None:
    # The code asks the loop to answer and blocks until it has: only a free loop can.
    ns: dict = {"loop": asyncio.get_running_loop(), "answered": threading.Event()}
    code = "print('t')\nloop.call_soon_threadsafe(answered.set)\nanswered.wait(30)"
    run = await run_python(code, ns, in_thread=True)
    assert run.stdout == "t\n" and run.result == "True"  # the loop ran while the code blocked


def test_run_python_asks_under_on_request() -> None:
    spec = PythonTools(namespace={}).list_tools()[0]
    assert spec.source == "native" and spec.trusted
    assert ask_reason(spec, "on-request", remembered=False) == "the tool says it is destructive"


def test_streams_are_restored_after_runs() -> None:
    before = (sys.stdout, sys.stderr)
    asyncio.run(run_python("print(1)", {}))
    assert (sys.stdout, sys.stderr) == before
