"""One session's fork server: ``python -I -S forkserver.py PARENT_PID SOCKET_FD``.

Starting the launcher (:mod:`nbagent.mcp.launcher`) costs a Python interpreter's start per
command; this process pays it once per session. It is started with an empty environment (it
never holds the API key), is not dumpable, and does one thing: on each message on its
``SOCK_SEQPACKET`` socket (four file descriptors: the command's stdin, stdout, stderr and a
control socket, passed with ``SCM_RIGHTS``) it forks. The fork closes the fork server's socket,
so no command can ask for another, and becomes that command's launcher: it writes its pid on the
control socket, reads the request (JSON: ``argv``, ``env``, ``cwd``, ``plan``) to its end, starts
a session of its own and runs :func:`launcher.run` (a private ``TMPDIR``, fresh namespaces and a
fresh Landlock domain per command, as a launcher started from scratch does). It then writes the
command's return code (as ``subprocess`` reports it) and waits for the control socket to close
before it exits, so its pid stays its own while nbagent may still kill its tree by it.

The fork server exits when its socket closes (nbagent closed it or died) or nbagent dies
(``PR_SET_PDEATHSIG``); each launcher it forked then sweeps up its command's tree, as a launcher
does when nbagent dies. The client side is :mod:`nbagent.sandbox.spawn`.

Standard library only, and no nbagent import: it starts from a cleared environment under ``-I -S``.
"""

from __future__ import annotations

import gc
import json
import os
import shutil  # noqa: F401  (the launcher's clean-up imports these: once here, not in every fork)
import signal
import socket
import sys
import warnings  # noqa: F401  (os.execvpe imports it)

TYPE_CHECKING = False  # what type checkers read as True, without importing typing
if TYPE_CHECKING:
    from nbagent.mcp import launcher
else:  # imported by path (no package under -I -S)
    sys.path[:0] = [os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "mcp")]
    import launcher

FDS = 4
"""stdin, stdout, stderr and the control socket, in that order."""


def _read_all(ctl: socket.socket) -> bytes:
    chunks = []
    while chunk := ctl.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _command(server: socket.socket, fds: list[int], parent: int) -> None:
    """In the fork: become the launcher of the one command ``fds`` came with, a child of
    ``parent`` (the fork server); never returns."""
    code = 1
    try:
        server.close()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
            os.close(fd)
        ctl = socket.socket(fileno=fds[3])  # close-on-exec: received with MSG_CMSG_CLOEXEC
        ctl.sendall(b"%d\n" % os.getpid())
        request = json.loads(_read_all(ctl))
        os.setsid()
        try:
            os.chdir(request["cwd"])
        except OSError as exc:
            launcher._say(f"cannot enter {request['cwd']!r}: {exc.strerror}")
            ctl.sendall(b"127\n")
            return
        plan, env = request["plan"], request["env"]
        tmpdir = None if plan is None else launcher.private_tmp(plan, env.get("TMPDIR"))

        def report(code: int) -> None:
            try:
                ctl.sendall(b"%d\n" % code)
            except OSError:
                pass  # told already, and nbagent has closed the socket

        status = launcher.run(parent, request["argv"], plan, env, tmpdir, report)
        report(os.waitstatus_to_exitcode(status))  # nbagent reads the first line it gets
        ctl.recv(1)  # nbagent closes the socket once it no longer needs this pid
        code = 0
    finally:
        os._exit(code)


def serve(server: socket.socket) -> None:
    """Fork a launcher per message until the socket closes."""
    me = os.getpid()
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(server, 16, FDS, socket.MSG_CMSG_CLOEXEC)
        except OSError:
            return
        if not message and not fds:
            return  # nbagent closed its end, or is gone
        if len(fds) == FDS:
            try:
                if os.fork() == 0:
                    _command(server, fds, me)
            except OSError:
                pass  # the closed control socket tells nbagent the command did not start
        for fd in fds:
            os.close(fd)


def main(argv: list[str]) -> None:
    parent, fd = int(argv[0]), int(argv[1])
    server = socket.socket(fileno=fd)

    def parent_died(signum: int, frame: object) -> None:
        if os.getppid() != parent:  # else only the spawning thread ended, not nbagent
            os._exit(0)

    signal.signal(signal.SIGUSR1, parent_died)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # launchers are reaped by the kernel
    for sig in (signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    launcher._prctl(launcher.PR_SET_DUMPABLE, 0)
    launcher._prctl(launcher.PR_SET_PDEATHSIG, signal.SIGUSR1)
    launcher.landlock.abi()  # libc and the calls every fork makes, looked up once here
    launcher.enforce._libc().unshare  # noqa: B018
    gc.disable()  # no cycles worth collecting here; and a collection in a fork copies the pages it touches
    gc.freeze()
    if os.getppid() == parent:
        serve(server)


if __name__ == "__main__":
    main(sys.argv[1:])
