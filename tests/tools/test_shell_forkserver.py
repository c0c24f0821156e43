"""The process the ``shell`` tool starts its commands from (the session's fork server), with the
real sandbox: it holds no secret, each command still gets a sandbox of its own, a killed one is
replaced at the next command, and none outlives the session."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.config import load_config
from nbagent.mcp.proctree import alive
from nbagent.protocol import CallInfo, ToolResult
from nbagent.sandbox import available
from nbagent.sandbox.spawn import FORKSERVER
from nbagent.tools import ShellTools, shell_policy
from tests.core.conftest import home, script
from tests.tools.test_shell import _running, shell
from tests.trusting import clean_environ
from tests.waiting import until

__all__ = ["home", "script"]

pytestmark = pytest.mark.skipif(bool(available()), reason=f"no sandbox here: {available()}")

INFO = CallInfo(thread_id="t", turn_id="u", call_id="c")


def started_from_fork_servers(children_only: bool = True, of: int | None = None) -> list[int]:
    """Live fork servers process ``of`` (this one) started, found by their command line as ``ps``
    shows it; with ``children_only=False`` the launchers they forked (which carry the same one) too."""
    parent = os.getpid() if of is None else of
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
            with open(f"/proc/{name}/stat", "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        ours = FORKSERVER.encode() in argv and str(parent).encode() in argv
        if ours and (ppid == parent or not children_only) and alive(int(name)):
            found.append(int(name))
    return found


def fork_servers() -> list[int]:
    return started_from_fork_servers()


def tools(mode: str = "workspace-write") -> ShellTools:
    return ShellTools(shell_policy(load_config(os.getcwd(), overrides={"sandbox_mode": mode})))


async def call(shell_tools: ShellTools, *argv: str) -> ToolResult:
    [spec] = shell_tools.list_tools()
    return await shell_tools.call_tool(spec, {"command": list(argv)}, INFO)


def text(result: ToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def test_a_command_after_the_fork_server_was_killed_still_runs_and_it_holds_no_secret(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The API key is in nbagent's environment, not in the fork server's; killed, it is replaced
    by the next command, which runs as if nothing happened."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-forkserver-" + os.urandom(6).hex())
    shell_tools = tools()
    try:
        assert not (await call(shell_tools, "true")).is_error
        [first] = fork_servers()
        with open(f"/proc/{first}/environ", "rb") as fh:
            assert os.environ["OPENAI_API_KEY"].encode() not in fh.read()
        os.kill(first, signal.SIGKILL)
        await until(lambda: first not in fork_servers(), "the killed fork server to be gone")
        result = await call(shell_tools, "bash", "-c", "echo after")
        assert not result.is_error and "after" in text(result), text(result)
        assert [pid for pid in fork_servers() if pid != first]
    finally:
        await shell_tools.aclose()
    assert not fork_servers()
    await until(lambda: not started_from_fork_servers(children_only=False), "every launcher to have exited")


async def test_each_command_gets_a_fresh_tmpdir_even_when_two_run_at_once(home: Path) -> None:
    """A file the first command leaves in its ``$TMPDIR`` is not in the second's, and two commands
    started together each get their own output."""
    shell_tools = tools()
    try:
        first = await call(shell_tools, "bash", "-c", 'echo planted > "$TMPDIR/left"; echo "tmp=$TMPDIR"')
        assert not first.is_error, text(first)
        second = await call(shell_tools, "bash", "-c", 'ls -A "$TMPDIR"; echo "tmp=$TMPDIR"')
        assert "left" not in text(second) and not second.is_error, text(second)
        tmp_first = text(first).split("tmp=")[1].split()[0]
        assert tmp_first != text(second).split("tmp=")[1].split()[0] and not Path(tmp_first).exists()
        three, four = await asyncio.gather(
            *(call(shell_tools, "bash", "-c", f"echo own-{n}; exit {n}") for n in (3, 4))
        )
        assert "own-3" in text(three) and "Exit code: 3" in text(three) and "own-4" not in text(three), text(three)
        assert "own-4" in text(four) and "Exit code: 4" in text(four), text(four)
    finally:
        await shell_tools.aclose()


async def test_no_fork_server_is_left_once_the_session_has_ended(home: Path, script) -> None:
    """A turn runs a command (which starts the fork server); when the session ends it is gone."""
    model = script(shell("echo", "hello"), {"text": "done"})
    async with Session(model=model, policy="on-request") as session:
        session.add_provider(tools())
        result = await asyncio.wait_for(session.run("go"), 60)
        assert result.status == "completed" and fork_servers()
    assert not fork_servers()
    await until(lambda: not started_from_fork_servers(children_only=False), "every launcher to have exited")


@pytest.mark.parametrize("mode", ["workspace-write", "danger-full-access"])
async def test_nbagent_killed_outright_leaves_no_fork_server_and_no_command(home: Path, mode: str) -> None:
    """nbagent runs no code when it is SIGKILLed mid-command: its fork server and the command
    (and what the command left detached) still all end."""
    seconds = f"62.{os.getpid()}{os.urandom(2).hex().translate(str.maketrans('abcdef', '123456'))}"
    program = textwrap.dedent(f"""
        import asyncio
        from nbagent.config import load_config
        from nbagent.protocol import CallInfo
        from nbagent.tools import ShellTools, shell_policy
        tools = ShellTools(shell_policy(load_config(".", overrides={{"sandbox_mode": {mode!r}}})))
        [spec] = tools.list_tools()
        argv = ["bash", "-c", "setsid sleep {seconds} & sleep {seconds}"]
        info = CallInfo(thread_id="t", turn_id="u", call_id="c")
        asyncio.run(tools.call_tool(spec, {{"command": argv, "timeout_ms": 60000}}, info))
    """)
    env = clean_environ() | {"NBAGENT_HOME": os.environ["NBAGENT_HOME"]}
    agent = subprocess.Popen([sys.executable, "-c", program], env=env, cwd=os.getcwd())
    try:
        await until(lambda: len(_running(seconds)) == 2, "the command and its detached child to run")
        agent.kill()
        agent.wait()
        await until(lambda: not _running(seconds), "the command and its detached child to end")
        await until(lambda: not started_from_fork_servers(False, agent.pid), "the fork server and its launchers to end")
    finally:
        agent.kill()
