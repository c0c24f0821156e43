"""``shell``: run a command (an argv list, as Codex's tool takes it) in the session's sandbox.

The command runs under the launcher's code every stdio MCP server runs under, forked by the
session's fork server (:mod:`nbagent.sandbox.spawn`: no Python start per command), under the
policy the MCP servers get (``sandbox_mode``, ``[sandbox_workspace_write]``): its own
``TMPDIR``, stdin closed, an allowlisted environment (no API key), both output streams read as
they come, each piece announced as an ``exec_command_output_delta`` event so the call's card
shows it while it runs. On timeout or
interrupt the whole process tree is killed (:mod:`nbagent.mcp.proctree`). The model gets the
exit code and the output (Codex's wording); a failure that reads as a sandbox denial is marked
(``SANDBOX_DENIAL``) so the person can be offered to run it again outside the sandbox
(``core/tool_call.py``). Where this system cannot enforce the sandbox, nothing runs: the call
fails with the message the MCP servers get.

A call with ``with_escalated_permissions: true`` runs outside the sandbox; the approval rule for
sandboxed tools (``core/approval.py``) makes sure a person approved it first.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import shutil
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from typing import Any, Literal

from nbagent.calls.events import emit
from nbagent.config import Config
from nbagent.core.approval import ESCALATE, JUSTIFICATION, SANDBOX_DENIAL, SANDBOX_USED
from nbagent.core.function_tools import own_tool_spec
from nbagent.core.provider import ToolProvider
from nbagent.mcp import proctree
from nbagent.mcp.env import ALLOWED_VARS
from nbagent.protocol import CallInfo, ExecCommandOutputDelta, ToolAnnotations, ToolResult, ToolSpec
from nbagent.protocol.tools import ProgressFn
from nbagent.sandbox import OPT_OUT, SandboxPolicy, SandboxUnavailable, available, prepare, require, resolve
from nbagent.sandbox.spawn import ForkServer, ForkServerGone
from nbagent.textsafe import one_line

DEFAULT_TIMEOUT_MS = 10_000
"""Codex's default for a command that names no ``timeout_ms``."""
MAX_TIMEOUT_MS = 600_000
KEPT_CHARS = 1_000_000
"""Output kept for the result: the first and the last half of this (the model's cap is applied after)."""
STREAMED_CHARS = 1_000_000
"""Output streamed into the card; past it the card says the rest is in the result."""
HELD_CHARS = 65_536
"""A line without its end yet is held until it ends or grows this long."""
SANDBOX_FAILED = 126
"""``nbagent.mcp.launcher.SANDBOX_FAILED`` (that module is a script, not imported): the sandbox
could not be entered and the command did not run."""
LAUNCHER_REFUSAL = "nbagent launcher: sandbox:"
NOT_A_DENIAL = (0, SANDBOX_FAILED, 127)
"""Exit codes never read as a sandbox denial: success, no sandbox, command not found."""
DENIED_WORDS = ("read-only file system", "permission denied", "operation not permitted", "eacces", "eperm", "erofs")
NO_NETWORK_WORDS = ("network is unreachable", "temporary failure in name resolution", "could not resolve host")
"""Said by a program the sandbox kept off the network (no interface but loopback)."""

_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                    "description": "The command and its arguments, as an argv list (no shell unless you name one)."},
        "workdir": {"type": "string", "description": "The folder to run in, relative to the workspace (default: the workspace)."},
        "timeout_ms": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS,
                       "description": f"Kill the command after this many milliseconds (default {DEFAULT_TIMEOUT_MS})."},
        ESCALATE: {"type": "boolean",
                   "description": "Run outside the sandbox; the user is asked first. Only when the sandbox stops a needed command."},
        JUSTIFICATION: {"type": "string", "description": f"Why the command needs {ESCALATE}, shown to the user."},
    },
    "required": ["command"],
    "additionalProperties": False,
}  # fmt: skip


def shell_policy(config: Config) -> SandboxPolicy:
    """The policy a command runs under: the top-level sandbox keys, as the MCP servers get them."""
    return resolve(
        config.sandbox_mode, config.sandbox_workspace_write, workspace=config.workspace or os.getcwd(),
        home=config.home_path, deny_read=config.sandbox.deny_read,
    )  # fmt: skip


def describe(policy: SandboxPolicy) -> str:
    """The tool's description: what it does and the sandbox it runs in (the model plans by it)."""
    head = (
        "Run a command (an argv list; use [\"bash\", \"-lc\", \"...\"] for a shell line) and return its exit "
        "code and output (stdout and stderr together). stdin is closed; it is killed at timeout_ms."
    )
    if not policy.sandboxed:
        return f"{head} It runs with the user's full rights (no sandbox): each call may need approval."
    if policy.sandbox_mode == "read-only":
        where = "it may read files but write only its own temporary folder ($TMPDIR); network access is off"
    else:
        roots = ", ".join(policy.writable_roots)
        net = "on" if policy.network_access else "off"
        where = f"it may write only in {roots} and its own $TMPDIR (.git stays read-only); network access is {net}"
    return (
        f"{head} It runs in the sandbox ({policy.sandbox_mode}): {where}; secrets such as ~/.ssh are hidden. "
        f"Inside the sandbox it needs no approval. If the sandbox stops a command you need, call it again with "
        f"{ESCALATE}: true and a {JUSTIFICATION}; the user decides."
    )


def sandbox_denial(output: str, exit_code: int | None, policy: SandboxPolicy) -> str | None:
    """The line saying what the sandbox refused (one naming a path or a host when there is one),
    when a failed command's output reads as a denial; conservative: only some words, only from a
    command that ran and failed."""
    if not policy.sandboxed or exit_code is None or exit_code in NOT_A_DENIAL:
        return None
    words = DENIED_WORDS if policy.network_access else DENIED_WORDS + NO_NETWORK_WORDS
    lines = [line.strip() for line in output.splitlines() if any(word in line.lower() for word in words)]
    if not lines:
        return None
    named = next((line for line in lines if "/" in line), lines[0])  # one naming a path or host first
    return one_line(named)[:300]


class _Kept:
    """The output kept for the result: its head and its tail, the middle counted, not kept."""

    def __init__(self, limit: int) -> None:
        self._half = limit // 2
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self.dropped = 0

    def add(self, text: str) -> None:
        if self._head_len < self._half:
            take = text[: self._half - self._head_len]
            self._head.append(take)
            self._head_len += len(take)
            text = text[len(take) :]
        if not text:
            return
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail_len - len(self._tail[0]) >= self._half:
            self.dropped += len(gone := self._tail.popleft())
            self._tail_len -= len(gone)

    def text(self) -> str:
        cut = f"\n[... {self.dropped} characters cut ...]\n" if self.dropped else ""
        return "".join(self._head) + cut + "".join(self._tail)


class _Run:
    """One command's output as it comes: kept for the result and streamed into the card."""

    def __init__(self, call_id: str) -> None:
        self.call_id = call_id
        self.kept = _Kept(KEPT_CHARS)
        self._streamed = 0

    def add(self, stream: Literal["stdout", "stderr"], text: str) -> None:
        if not text:
            return
        self.kept.add(text)
        if self._streamed < STREAMED_CHARS:
            chunk = text[: STREAMED_CHARS - self._streamed]
            self._streamed += len(chunk)
            if self._streamed >= STREAMED_CHARS:
                chunk += "\n[... the rest of the output is in the result]\n"
            emit(ExecCommandOutputDelta(call_id=self.call_id, stream=stream, chunk=chunk))


async def _pump(reader: asyncio.StreamReader, stream: Literal["stdout", "stderr"], run: _Run) -> None:
    """Read one stream to its end, passing on whole lines: a line (a secret in it, a path a denial
    names) is never split between two events, unless it runs past :data:`HELD_CHARS`."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    held = ""
    while data := await reader.read(65536):
        text = held + decoder.decode(data)
        cut = text.rfind("\n") + 1 or (len(text) if len(text) >= HELD_CHARS else 0)
        held = text[cut:]
        run.add(stream, text[:cut])
    run.add(stream, held + decoder.decode(b"", final=True))


def _spec(policy: SandboxPolicy) -> ToolSpec:
    spec = own_tool_spec(
        "shell", describe(policy), _PARAMETERS, source="native", title="Run a command",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=policy.network_access),
    )  # fmt: skip
    return spec.model_copy(update={"sandboxed": policy.sandboxed})


class ShellTools(ToolProvider):
    """A ``ToolProvider`` with one tool, ``shell``, run under ``policy`` (:func:`shell_policy`)."""

    generation = 0
    """Bumped when a turn's own sandbox changes the tool's description."""

    def __init__(self, policy: SandboxPolicy) -> None:
        self.policy = policy
        self._turns: dict[str, SandboxPolicy] = {}
        self._spec = _spec(policy)
        self._forks = ForkServer()
        self._probed = False

    def sandbox_turn(self, turn_id: str, policy: SandboxPolicy | None) -> None:
        """Run ``turn_id``'s commands under ``policy`` (``None``: the session's again), and tell
        the model so in the tool's description from its next request (``%%agent --sandbox``)."""
        if policy is None:
            self._turns.pop(turn_id, None)
        else:
            self._turns[turn_id] = policy
        self._spec = _spec(next(reversed(self._turns.values()), self.policy))
        self.generation += 1

    def list_tools(self) -> Sequence[ToolSpec]:
        return [self._spec]

    async def call_tool(
        self, spec: ToolSpec, arguments: dict[str, Any], call: CallInfo, on_progress: ProgressFn | None = None
    ) -> ToolResult:
        problem = _problem(arguments)
        if problem is not None:
            return ToolResult.error(f"shell: {problem}")
        policy = self._turns.get(call.turn_id, self.policy)
        if arguments.get(ESCALATE) is True:  # approved by a person (core/approval.py), or full-auto
            policy = policy.model_copy(update={"sandbox_mode": "danger-full-access", "network_access": True})
        try:
            if policy.sandboxed and not self._probed:  # the first check starts a probe: off the loop
                await asyncio.to_thread(available)
                self._probed = True
            require(policy, "The command")
        except SandboxUnavailable as exc:
            return ToolResult.error(str(exc))
        try:
            cwd = _workdir(policy, arguments.get("workdir"))
        except ValueError as exc:
            return ToolResult.error(f"shell: {exc}")
        timeout_ms = arguments.get("timeout_ms", DEFAULT_TIMEOUT_MS)
        return await self._run(policy, list(arguments["command"]), cwd, timeout_ms, call.call_id)

    async def aclose(self) -> None:
        """Stop the fork server the commands start from (the session ends)."""
        self._forks.close()

    async def _run(self, policy: SandboxPolicy, argv: list[str], cwd: str, timeout_ms: int, call_id: str) -> ToolResult:
        tag = proctree.new_tag()
        env = {name: os.environ[name] for name in ALLOWED_VARS if name in os.environ}
        env[proctree.MARKER_VAR] = tag
        own_tmp = None if policy.sandboxed else tempfile.mkdtemp(prefix="nbagent-shell-")
        if own_tmp is not None:  # the launcher makes a sandboxed command's own
            env["TMPDIR"] = own_tmp
        plan, env = prepare(policy, env)
        run = _Run(call_id)
        started = time.perf_counter()
        timed_out = False
        try:
            try:
                proc = await asyncio.wait_for(self._forks.start(argv, env, cwd, plan), timeout_ms / 1000)
            except ForkServerGone as exc:
                return ToolResult.error(f"The command was not started: {exc}. The next command tries again.")
            except TimeoutError:  # the fork server does not answer: the next command gets a new one
                self._forks.close()
                return _result(policy, "", None, True, timeout_ms, time.perf_counter() - started)
            try:
                pumps = asyncio.gather(_pump(proc.stdout, "stdout", run), _pump(proc.stderr, "stderr", run))
                try:
                    await asyncio.wait_for(asyncio.shield(pumps), timeout_ms / 1000)
                    code = await proc.wait()
                except TimeoutError:
                    timed_out = True
                    proctree.kill_all([proc.pid], proc.pid, tag)
                    await pumps
                    code = await proc.wait()
                except asyncio.CancelledError:  # the turn was interrupted: nothing of it may go on
                    proctree.kill_all([proc.pid], proc.pid, tag)
                    raise
            finally:
                proc.close()
        finally:
            if own_tmp is not None:
                shutil.rmtree(own_tmp, ignore_errors=True)
        return _result(policy, run.kept.text(), code, timed_out, timeout_ms, time.perf_counter() - started)


def _problem(arguments: dict[str, Any]) -> str | None:
    """Why the arguments cannot run (the schema, checked here too: edited arguments reach us)."""
    unknown = sorted(set(arguments) - set(_PARAMETERS["properties"]))
    if unknown:
        return f"unknown argument(s) {', '.join(unknown)}"
    argv = arguments.get("command")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv) or not argv[0]:
        return "'command' must be a non-empty list of strings (the argv), e.g. [\"ls\", \"-la\"]"
    if any("\0" in a for a in argv):
        return "'command' holds a NUL character"
    timeout = arguments.get("timeout_ms", DEFAULT_TIMEOUT_MS)
    if not isinstance(timeout, int) or isinstance(timeout, bool) or not 0 < timeout <= MAX_TIMEOUT_MS:
        return f"'timeout_ms' must be an integer from 1 to {MAX_TIMEOUT_MS}"
    if not isinstance(arguments.get(ESCALATE, False), bool):
        return f"'{ESCALATE}' must be true or false"
    if not isinstance(arguments.get(JUSTIFICATION, ""), str) or not isinstance(arguments.get("workdir", ""), str):
        return f"'workdir' and '{JUSTIFICATION}' must be strings"
    return None


def _workdir(policy: SandboxPolicy, workdir: str | None) -> str:
    """The folder to run in (relative to the workspace); raises ``ValueError`` saying why not: it
    must exist and, in the sandbox, not be one the sandbox hides."""
    path = os.path.realpath(os.path.join(policy.workspace, os.path.expanduser(workdir or ".")))
    if not os.path.isdir(path):
        raise ValueError(f"workdir {workdir!r} is not a folder ({path})")
    hidden = next((d for d in policy.deny_read if path == d or path.startswith(d.rstrip("/") + "/")), None)
    if policy.sandboxed and hidden is not None:
        raise ValueError(f"workdir {workdir!r} is inside {hidden}, which the sandbox hides")
    return path


def _result(
    policy: SandboxPolicy, output: str, code: int | None, timed_out: bool, timeout_ms: int, seconds: float
) -> ToolResult:
    """Codex's wording for the model: exit code, wall time, output; a sandbox denial named."""
    if code == SANDBOX_FAILED and LAUNCHER_REFUSAL in output:
        reason = output.split(LAUNCHER_REFUSAL, 1)[1].split(";", 1)[0].strip()
        return ToolResult.error(
            f"The command was not started: its sandbox ({policy.sandbox_mode}) could not be entered ({reason}). "
            f"To run commands without a sandbox, set {OPT_OUT}"
        )
    head = f"command timed out after {timeout_ms} milliseconds\n" if timed_out else ""
    shown = code if code is None or code >= 0 else 128 - code  # killed by a signal: as a shell says it
    text = f"{head}Exit code: {shown}\nWall time: {seconds:.1f} seconds\nOutput:\n{output}"
    denial = None if timed_out else sandbox_denial(output, code, policy)
    if denial is not None:
        text += f"\nSandbox ({policy.describe()}) denied: {denial}"
    return ToolResult(
        content=ToolResult.text(text).content, is_error=timed_out or code != 0,
        meta={SANDBOX_DENIAL: denial, SANDBOX_USED: policy.describe()} if denial is not None else None,
    )  # fmt: skip
