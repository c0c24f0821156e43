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
instead: the launcher makes the server a private ``TMPDIR``, enters new namespaces
(:func:`nbagent.sandbox.enforce.enter_namespaces`; the new PID namespace is its children's) and
forks process 1 of that PID namespace, which mounts its ``/proc`` and forks the server; the
server puts itself under Landlock and execs. The launcher itself stays outside Landlock and
outside the sandbox's PID namespace, where no sandboxed process can see or signal it. A step that fails ends the start with exit code :data:`SANDBOX_FAILED` and a line on
stderr naming it: the server never runs with less confinement than it asked for.

Standard library only, and no nbagent import: it must start fast, from a cleared environment.
"""

from __future__ import annotations

import os
import signal
import sys

TYPE_CHECKING = False  # what type checkers read as True, without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Report = Callable[[int], None]

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
        enforce._libc().prctl(option, value, 0, 0, 0)
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


def _spawn(
    command: list[str], plan: dict[str, Any] | None, env: dict[str, str], tmpdir: str | None, report: Report | None
) -> int:
    """Fork the server: the child enters the signal-scoped domain and becomes the command. Under
    a plan the launcher enters the new namespaces first (the PID namespace is its children's,
    not its own), so the child is process 1 of the sandbox's PID namespace, which forks the
    server (:func:`_init`).

    A command that cannot start is reported as a shell would, exit code 127.
    """
    if tmpdir is not None:
        env["TMPDIR"] = tmpdir
    if plan is not None:
        _prctl(PR_SET_DUMPABLE, 1)  # else /proc/self/uid_map is not this process's to write
        try:
            enforce.enter_namespaces(plan)
        finally:
            _prctl(PR_SET_DUMPABLE, 0)
    pid = os.fork()
    if pid:
        return pid
    try:
        if plan is None:
            landlock.scope_signals()
        else:
            _init(plan, report, tmpdir)
        os.execvpe(command[0], command, env)
    except enforce.SandboxError as exc:
        _refused(exc)
        os._exit(SANDBOX_FAILED)
    except OSError as exc:
        _say(f"cannot start {command[0]!r}: {exc.strerror}")
    finally:
        os._exit(127)


def _say(text: str) -> None:
    print(f"nbagent launcher: {text}", file=sys.stderr, flush=True)


def _refused(exc: enforce.SandboxError) -> None:
    _say(f"sandbox: {exc}; the server was not started")


def _init(plan: dict[str, Any], report: Report | None, tmpdir: str | None) -> None:
    """In process 1 of the sandbox's PID namespace: mount its ``/proc``, fork the server, wait
    for it (adopting the namespace's orphans) and exit as it did, telling ``report`` its return
    code first, its ``TMPDIR`` removed (the namespaces' teardown comes after; the launcher
    removes that folder again once nothing of the sandbox is left). It does not keep the
    server's stdio open, so the server's end is an EOF at once. Returns only in the server,
    Landlock in force, ready to exec."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    enforce.mount_proc()
    server = os.fork()
    if server:
        _close_stdio()
        status = _wait_for(server)
        if report is not None:
            if tmpdir is not None:
                import shutil

                shutil.rmtree(tmpdir, ignore_errors=True)
            report(-os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.waitstatus_to_exitcode(status))
        # Process 1 cannot die of a signal it sends itself: 128 + the signal, as a shell says it.
        os._exit(128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.waitstatus_to_exitcode(status))
    enforce.restrict(plan)


def _wait_for(child: int) -> int:
    """Reap every child (process 1 adopts the namespace's orphans) until ``child`` exits."""
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            return status


def _close_stdio() -> None:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _has_children() -> bool:
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


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


def _exit_like(status: int) -> None:
    """Exit with the server's status; a server killed by a signal makes the launcher die of it too."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        if sig != signal.SIGKILL:
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def private_tmp(plan: dict[str, Any], env_tmp: str | None) -> str:
    """A fresh folder only this server may write, in the system's temporary folder, added to the
    plan's write roots."""
    path = os.path.join(env_tmp or "/tmp", f"nbagent-tmp-{os.getpid()}-{os.urandom(4).hex()}")
    os.mkdir(path, 0o700)
    plan["write"] = [*plan.get("write", []), path]
    return path


def run(
    parent: int, command: list[str], plan: dict[str, Any] | None, env: dict[str, str], tmpdir: str | None,
    report: Report | None = None,
) -> int:  # fmt: skip
    """Run ``command`` as this process's child with ``env`` (sandboxed under ``plan`` when there
    is one), sweep up what it leaves, and return its wait status. ``parent`` is the process
    whose death (``PR_SET_PDEATHSIG``) ends the command early; in a sandbox, ``report`` is told
    the command's return code (as ``subprocess`` gives it) by process 1 of its namespace, as
    soon as the command has exited."""
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
    server = 0
    try:
        if os.getppid() != parent:
            raise _ParentGone
        server = _spawn(command, plan, env, tmpdir, report)
        _close_stdio()  # the server alone holds the pipes now: its exit is an EOF nbagent sees at once
        while True:
            try:
                pid, code = os.waitpid(-1, 0)  # orphans re-parented here are reaped on the way
            except ChildProcessError:
                break
            if pid == server:
                status = code
                break
        if plan is not None and os.WIFEXITED(status) and 128 < (code := os.WEXITSTATUS(status)) < 128 + signal.NSIG:
            status = code - 128  # process 1 said its server died of this signal: the same as a wait status
    except enforce.SandboxError as exc:  # the namespaces could not be entered: nothing was started
        _refused(exc)
        status = SANDBOX_FAILED << 8
    except _ParentGone:
        pass
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    if plan is not None:
        # All of a sandbox is in its PID namespace (whose /proc is the one this launcher sees
        # now): killing its process 1, a child not reaped yet, ends everything in it.
        if server and _has_children():
            os.kill(server, signal.SIGKILL)
    elif _has_children():
        # As subreaper every descendant is under ``me``: the parent chain suffices, and skipping
        # the marker scan of every process's environment keeps a server's exit cheap. With no
        # child left there is no descendant either (an orphan would have been re-parented here).
        proctree.kill_all([me], None, None)
    _reap_all()
    if tmpdir is not None:
        import shutil

        shutil.rmtree(tmpdir, ignore_errors=True)
    return status


def main(argv: list[str]) -> None:
    parent, command = int(argv[0]), argv[1:]
    plan: dict[str, Any] | None = None
    tmpdir: str | None = None
    if command[:1] == ["--sandbox"]:
        import json

        plan, command = json.loads(command[1]), command[2:]
        tmpdir = private_tmp(plan, os.environ.get("TMPDIR"))
    _exit_like(run(parent, command, plan, _environ(), tmpdir))


if __name__ == "__main__":
    main(sys.argv[1:])
