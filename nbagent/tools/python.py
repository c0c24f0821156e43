"""``run_python``: run code in the kernel's user namespace and give the model what it printed.

A turn usually runs as a background task on the kernel's event loop (DESIGN §9), so this tool
must never wait for something that only that loop can deliver. The code therefore runs
synchronously on the loop, like a cell would (a top-level ``await`` in the code is awaited
there, so ``await asyncio.sleep(1)`` lets other cells and comm messages through meanwhile).
``in_thread=True`` runs synchronous code in a worker thread instead, which keeps the loop free
at the price of running user code off the main thread (GUI toolkits and some libraries mind).

stdout and stderr are captured per call through a context variable: the process-wide streams
are wrapped once by a router that sends writes made inside this call (and in threads it starts
with the same context) to the call's buffers, and every other write (another cell running while
this call awaits, ipykernel's own threads) to the original stream. So the captured text is only
the call's, and cells never lose output to it.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import io
import itertools
import linecache
import sys
import threading
import traceback
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TextIO

from nbagent.core.function_tools import own_tool_spec
from nbagent.core.provider import ToolProvider
from nbagent.protocol import CallInfo, TextBlock, ToolAnnotations, ToolResult, ToolSpec
from nbagent.protocol.tools import ProgressFn

_MAX_CHARS = 20_000


@dataclass
class PythonRun:
    """What one run produced."""

    stdout: str = ""
    stderr: str = ""
    result: str | None = None
    """``repr`` of the value of a final expression, when it is not ``None``."""
    error: str | None = None
    """The formatted traceback (without nbagent's own frames)."""
    error_name: str | None = None

    def to_text(self, max_chars: int = _MAX_CHARS) -> str:
        parts = []
        for label, value in (("stdout", self.stdout), ("stderr", self.stderr)):
            if value:
                parts.append(f"{label}:\n{_cut(value, max_chars)}")
        if self.result is not None:
            parts.append(f"result:\n{_cut(self.result, max_chars)}")
        if self.error is not None:
            parts.append(f"exception:\n{_cut(self.error, max_chars)}")
        return "\n".join(parts) if parts else "(no output, no result)"


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters cut]"


# -- per-call stream capture --------------------------------------------------------------------


@dataclass
class _Capture:
    stdout: io.StringIO = field(default_factory=io.StringIO)
    stderr: io.StringIO = field(default_factory=io.StringIO)


_capture: ContextVar[_Capture | None] = ContextVar("nbagent_run_python_capture", default=None)


class _RoutingStream(io.TextIOBase):
    """Stands in for ``sys.stdout``/``sys.stderr``: writes go to the current call's buffer when
    there is one in this context, else to the stream it replaced."""

    def __init__(self, original: TextIO, which: str) -> None:
        self.original = original
        self.which = which

    def write(self, text: str) -> int:
        capture = _capture.get()
        if capture is None:
            return self.original.write(text)
        return getattr(capture, self.which).write(text)

    def flush(self) -> None:
        if _capture.get() is None:
            self.original.flush()

    def writable(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        # encoding, isatty, fileno, ipykernel's OutStream extras...
        return getattr(self.original, name)


_install_lock = threading.Lock()
_users = 0


def _install() -> None:
    global _users
    with _install_lock:
        _users += 1
        if not isinstance(sys.stdout, _RoutingStream):
            sys.stdout = _RoutingStream(sys.stdout, "stdout")
        if not isinstance(sys.stderr, _RoutingStream):
            sys.stderr = _RoutingStream(sys.stderr, "stderr")


def _uninstall() -> None:
    global _users
    with _install_lock:
        _users -= 1
        if _users > 0:
            return
        # Only undo our own wrapper: if something replaced it meanwhile, leave that alone.
        if isinstance(sys.stdout, _RoutingStream):
            sys.stdout = sys.stdout.original
        if isinstance(sys.stderr, _RoutingStream):
            sys.stderr = sys.stderr.original


# -- running ------------------------------------------------------------------------------------

_counter = itertools.count(1)
_THIS_FILE = __file__


def _compile(source: str) -> tuple[Any | None, Any | None, bool]:
    """Split off a final expression (its value is the result) and compile both halves.

    Returns ``(body, last_expression, is_async)``; top-level ``await`` is allowed.
    """
    filename = f"<run_python-{next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    tree = ast.parse(source, filename=filename)
    last: ast.Expression | None = None
    if tree.body and isinstance(tail := tree.body[-1], ast.Expr):
        tree.body.pop()
        last = ast.Expression(body=tail.value)
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    body = compile(tree, filename, "exec", flags=flags) if tree.body else None
    expr = compile(last, filename, "eval", flags=flags) if last is not None else None
    is_async = any(code is not None and code.co_flags & inspect.CO_COROUTINE for code in (body, expr))
    return body, expr, bool(is_async)


def _format_error(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):  # the frames would only be the compiler's
        return "".join(traceback.format_exception_only(type(exc), exc))
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == _THIS_FILE:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


def _result_repr(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return repr(value)
    except Exception as exc:  # a broken __repr__ must not fail the call
        return f"<{type(value).__name__} object; repr() raised {exc!r}>"


async def run_python(
    source: str, namespace: dict[str, Any], *, shell: Any = None, in_thread: bool = False
) -> PythonRun:
    """Run ``source`` in ``namespace`` and return its output; never raises for the code's errors.

    ``shell`` (an IPython shell) turns magics and ``!cmd`` into Python first, as a cell would.
    """
    run = PythonRun()
    capture = _Capture()
    token = _capture.set(capture)
    _install()
    try:
        if shell is not None:
            source = shell.transform_cell(source)
        body, expr, is_async = _compile(source)

        def execute_sync() -> Any:
            if body is not None:
                eval(body, namespace)
            return eval(expr, namespace) if expr is not None else None

        if is_async:
            if body is not None:
                value = eval(body, namespace)
                if inspect.iscoroutine(value):
                    await value
            value = eval(expr, namespace) if expr is not None else None
            if inspect.iscoroutine(value):
                value = await value
        elif in_thread:
            value = await asyncio.to_thread(execute_sync)  # copies the context, so capture holds
        else:
            value = execute_sync()
        run.result = _result_repr(value)
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # SystemExit and KeyboardInterrupt from user code are results too
        run.error = _format_error(exc)
        run.error_name = type(exc).__name__
    finally:
        _capture.reset(token)
        _uninstall()
        run.stdout = capture.stdout.getvalue()
        run.stderr = capture.stderr.getvalue()
    return run


# -- the tool -----------------------------------------------------------------------------------

_DESCRIPTION = (
    "Run Python code in the notebook's kernel, in the user's namespace (variables persist and are "
    "shared with the notebook's cells). Returns what the code printed to stdout and stderr, the repr "
    "of the value of a final expression, and the traceback if it raised. IPython magics work. "
    "Rich output (plots, display()) goes to the notebook, not to this result. It runs in the live kernel "
    "with the user's full rights, outside any sandbox, so each call may need the user's approval; to run a "
    "command, use the shell tool, which runs in the sandbox."
)
_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "Python source to run."}},
    "required": ["code"],
    "additionalProperties": False,
}


class PythonTools(ToolProvider):
    """A ``ToolProvider`` with one tool, ``run_python``.

    Args:
        shell: the IPython shell whose ``user_ns`` the code runs in; defaults to the running
            one (``get_ipython()``), else a private namespace.
        in_thread: run synchronous code in a worker thread instead of on the event loop.
        max_chars: per-section cut of what the model sees.
    """

    generation = 0
    """The list never changes."""

    def __init__(self, shell: Any = None, *, namespace: dict[str, Any] | None = None, in_thread: bool = False,
                 max_chars: int = _MAX_CHARS) -> None:
        if shell is None and namespace is None:
            try:
                from IPython import get_ipython

                shell = get_ipython()
            except ImportError:  # pragma: no cover
                shell = None
        self.shell = shell
        self.namespace = namespace if namespace is not None else (shell.user_ns if shell is not None else {})
        self.in_thread = in_thread
        self.max_chars = max_chars
        self._spec = own_tool_spec(
            "run_python",
            _DESCRIPTION,
            _PARAMETERS,
            source="native",
            title="Run Python in the kernel",
            annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True),
        )

    def list_tools(self) -> Sequence[ToolSpec]:
        return [self._spec]

    async def call_tool(
        self, spec: ToolSpec, arguments: dict[str, Any], call: CallInfo, on_progress: ProgressFn | None = None
    ) -> ToolResult:
        code = arguments.get("code")
        if spec.name != "run_python":
            return ToolResult.error(f"unknown tool {spec.name!r}")
        if not isinstance(code, str):
            return ToolResult.error("run_python needs a string argument 'code'")
        unknown = sorted(set(arguments) - {"code"})
        if unknown:
            return ToolResult.error(f"run_python: unknown argument(s) {', '.join(unknown)}")
        run = await run_python(code, self.namespace, shell=self.shell, in_thread=self.in_thread)
        return ToolResult(
            content=[TextBlock(text=run.to_text(self.max_chars))],
            structured={"stdout": run.stdout, "stderr": run.stderr, "result": run.result, "error": run.error},
            is_error=run.error is not None,
        )
