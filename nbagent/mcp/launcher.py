"""The parent a stdio server sees: ``python -I -S launcher.py PARENT_PID [--sandbox PLAN] COMMAND [ARGS...]``.

Started with the server's own (cleared) environment, it runs the server as its child and stays
its parent, so a server reading ``/proc/$PPID/environ`` finds nothing it was not given; the
process that holds the API key is one level further up (docs/security.md says what that does
and does not protect). It is also the server's child subreaper: an orphan the server leaves
(``setsid``, double fork) is re-parented here rather than to init, so the parent chain nbagent
walks at shutdown still reaches it. That holds only while the launcher lives, so the server runs
in a Landlock domain that keeps its signals and ``ptrace`` inside its own tree
(:mod:`nbagent.mcp.landlock`), and the launcher makes itself non-dumpable so that its ``/proc``
files (``oom_score_adj``) are not the user's to write. When the server exits, the launcher kills
what it left behind and exits with the server's status; when nbagent dies (``PR_SET_PDEATHSIG``)
it kills the server and everything under it.

With ``--sandbox PLAN`` (JSON, :mod:`nbagent.sandbox`) the server runs in the OS sandbox
instead: the launcher makes the server a private ``TMPDIR``, its child enters new namespaces
(:func:`nbagent.sandbox.enforce.enter_namespaces`) and forks process 1 of the new PID namespace,
which mounts its ``/proc`` and forks the server; the server puts itself under Landlock and
execs. A step that fails ends the start with exit code :data:`SANDBOX_FAILED` and a line on
stderr naming it: the server never runs with less confinement than it asked for.

Standard library only, and no nbagent import: it must start fast, from a cleared environment.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

TYPE_CHECKING = False  # what type checkers read as True, without importing typing
if TYPE_CHECKING:
    from typing import Any

    from nbagent.mcp import landlock, proctree
    from nbagent.sandbox import enforce
else:  # sibling modules, imported by path (no package under -I -S)
    _HERE = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [_HERE, os.path.join(os.path.dirname(_HERE), "sandbox")]
    import enforce
    import landlock
    import proctree

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
REAP_ROUNDS = 200
SANDBOX_FAILED = 126
"""Exit code of a sandboxed start that could not enter its sandbox (the server did not run)."""


class _ParentGone(Exception):
    pass


def _prctl(option: int, value: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the parent's environment is still clean
        pass


def _environ() -> dict[str, str]:
    """The environment exactly as nbagent passed it: Python's locale coercion may have added
    ``LC_CTYPE`` to ``os.environ``, and the server must get its environment verbatim."""
    try:
        with open("/proc/self/environ", "rb") as fh:
            raw = fh.read()
    except OSError:
        return dict(os.environ)
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {os.fsdecode(k): os.fsdecode(v) for k, v in pairs}


def _spawn(command: list[str], plan: dict[str, Any] | None, tmpdir: str | None) -> int:
    """Fork the server: the child enters the signal-scoped domain (or the sandbox), then becomes
    the command.

    A command that cannot start is reported as a shell would, exit code 127.
    """
    env = _environ()
    if tmpdir is not None:
        env["TMPDIR"] = tmpdir
    pid = os.fork()
    if pid:
        return pid
    try:
        if plan is None:
            landlock.scope_signals()
        else:
            _sandboxed(command, env, plan)
        os.execvpe(command[0], command, env)
    except enforce.SandboxError as exc:
        _say(f"sandbox: {exc}; the server was not started")
        os._exit(SANDBOX_FAILED)
    except OSError as exc:
        _say(f"cannot start {command[0]!r}: {exc.strerror}")
    finally:
        os._exit(127)


def _say(text: str) -> None:
    print(f"nbagent launcher: {text}", file=sys.stderr, flush=True)


def _sandboxed(command: list[str], env: dict[str, str], plan: dict[str, Any]) -> None:
    """In the launcher's child: enter the namespaces, then fork process 1 of the new PID
    namespace, which forks the server; each waits for its child and exits as it did. Returns
    only in the server, Landlock in force, ready to exec."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    _prctl(PR_SET_DUMPABLE, 1)  # else /proc/self/uid_map is not this process's to write
    enforce.enter_namespaces(plan)
    init = os.fork()
    if init:
        _exit_like(_wait_for(init), init_code=True)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    enforce.mount_proc()
    _prctl(PR_SET_DUMPABLE, 0)
    server = os.fork()
    if server:
        status = _wait_for(server)
        # Process 1 cannot die of a signal it sends itself: 128 + the signal, as a shell says it.
        os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.waitstatus_to_exitcode(status))
    enforce.restrict(plan)


def _wait_for(child: int) -> int:
    """Reap every child (process 1 adopts the namespace's orphans) until ``child`` exits."""
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            return status


def _reap_all() -> None:
    """Collect every exited child (orphans re-parented here included) so none stays a zombie."""
    for _ in range(REAP_ROUNDS):
        try:
            pid, _ = os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid == 0:
            return


def _exit_like(status: int, init_code: bool = False) -> None:
    """Exit with the server's status; a server killed by a signal makes the launcher die of it too
    (``init_code``: an exit code over 128 from process 1 of a sandbox is such a death)."""
    code = os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 0
    if os.WIFSIGNALED(status) or (init_code and 128 < code < 128 + signal.NSIG):
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else code - 128
        if sig != signal.SIGKILL:
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def _private_tmp(env_tmp: str | None) -> str:
    """A fresh folder only this server may write, in the system's temporary folder."""
    path = os.path.join(env_tmp or "/tmp", f"nbagent-tmp-{os.getpid()}-{os.urandom(4).hex()}")
    os.mkdir(path, 0o700)
    return path


def main(argv: list[str]) -> None:
    parent, command = int(argv[0]), argv[1:]
    plan: dict[str, Any] | None = None
    tmpdir: str | None = None
    if command[:1] == ["--sandbox"]:
        import json

        plan, command = json.loads(command[1]), command[2:]
        tmpdir = _private_tmp(os.environ.get("TMPDIR"))
        plan["write"] = [*plan.get("write", []), tmpdir]
    me = os.getpid()

    def parent_died(signum: int, frame: object) -> None:
        if os.getppid() != parent:  # else only the spawning thread ended, not nbagent
            raise _ParentGone

    # The group's SIGTERM is for the server; the launcher outlives it to sweep up after it.
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: None)
    signal.signal(signal.SIGUSR1, parent_died)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_DUMPABLE, 0)
    _prctl(PR_SET_PDEATHSIG, signal.SIGUSR1)
    status = 1 << 8  # a wait status: "exited with 1", until the server's own replaces it
    try:
        if os.getppid() != parent:
            raise _ParentGone
        server = _spawn(command, plan, tmpdir)
        # The server alone holds the pipes now: its exit is an EOF nbagent sees at once.
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        while True:
            try:
                pid, code = os.waitpid(-1, 0)  # orphans re-parented here are reaped on the way
            except ChildProcessError:
                break
            if pid == server:
                status = code
                break
    except _ParentGone:
        pass
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    # As subreaper every descendant is under ``me``: the parent chain suffices, and skipping the
    # marker scan of every process's environment keeps a server's exit cheap.
    proctree.kill_all([me], None, None)
    _reap_all()
    if tmpdir is not None:
        import shutil

        shutil.rmtree(tmpdir, ignore_errors=True)
    _exit_like(status)


if __name__ == "__main__":
    main(sys.argv[1:])
