"""Kernel status for the comm messages a running cell lets in, so typed input arrives whole.

ipykernel 7.4 dispatches ``comm_open``/``comm_msg``/``comm_close`` while an async cell awaits
(``Kernel.shell_main`` finds the shell's lock held and calls ``dispatch_shell(msg,
concurrent=True)``), but on that path it publishes no ``status`` for them: neither during the
cell nor after it. The ipywidgets front end (``@jupyter-widgets/base``: JupyterLab 4, Notebook 7,
VS Code, Voila) sends one state update per widget at a time and keeps every later change in a
buffer until it sees ``status: idle`` whose parent is the previous update. So in a
``%%agent --wait`` cell only the first key typed into a text field, the deny reason or the
arguments editor ever reached the kernel; buttons worked because a click is a custom message,
which is not throttled.

The fix publishes, around each such concurrent dispatch, what the kernel publishes for the same
message when it is idle: ``busy`` then ``idle`` with the comm message as parent. JupyterLab's
kernel connection (and jupyter_server's ``execution_state``) take the last status whatever its
parent (comm messages are "tracked" types), so right after that ``idle`` the request still
running on that shell is reported ``busy`` again; and since the running request is forgotten
only after ipykernel published its own final ``idle`` (with no await in between), the cell's
``idle`` is always the last word, so nothing reads the kernel as busy after the cell ended. The cell's
execution state itself comes from its ``execute_reply`` and its own ``idle``, which nothing here
touches.

Why not a ``--wait`` that does not block the kernel: a cell that returns before its turn ends
lets "Run All" and nbclient send the next cell, which then runs before the turn is over; only a
running cell holds the next ``execute_request``. The other option ipykernel leaves, answering
the comm messages from inside the cell, needs its private message loop (``jupyter-ui-poll``
hangs on ipykernel >= 7.1). DESIGN §9.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any

_MARK = "_nbagent_comm_status"


class CommStatus:
    """Wraps one kernel's ``dispatch_shell``; ``running`` is, per shell thread, the request
    dispatched the ordinary way (it holds that shell's lock) until ipykernel is done with it."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.dispatch = kernel.dispatch_shell
        self.running: dict[int, dict[str, Any]] = {}

    def _peek(self, msg: Any) -> dict[str, Any] | None:
        """The message's header part, unsigned content left alone (as ``shell_main`` peeks)."""
        session = self.kernel.session
        try:
            _idents, frames = session.feed_identities(msg, copy=False)
            return dict(session.deserialize(frames, content=False, copy=False))
        except Exception:  # ipykernel's own control frames ("stop aborting") are no message
            return None

    async def dispatch_shell(self, msg: Any, /, subshell_id: str | None = None, *, concurrent: bool = False) -> Any:
        thread = threading.get_ident()
        if not concurrent:
            request = self._peek(msg)
            if request is not None:
                self.running[thread] = request
            try:
                return await self.dispatch(msg, subshell_id=subshell_id)
            finally:
                self.running.pop(thread, None)
        comm = self._peek(msg)
        if comm is None:
            return await self.dispatch(msg, subshell_id=subshell_id, concurrent=True)
        publish = self.kernel._publish_status
        publish("busy", "shell", parent=comm)
        try:
            return await self.dispatch(msg, subshell_id=subshell_id, concurrent=True)
        finally:
            publish("idle", "shell", parent=comm)
            running = self.running.get(thread)
            if running is not None:
                publish("busy", "shell", parent=running)


def install(kernel: Any) -> bool:
    """Install on ``kernel`` once; ``False`` where it does not apply (no ipykernel, or one
    without the concurrent comm path this completes)."""
    if getattr(kernel, _MARK, None) is not None:
        return True
    dispatch = getattr(kernel, "dispatch_shell", None)
    if dispatch is None or not hasattr(kernel, "_publish_status"):
        return False
    try:
        if "concurrent" not in inspect.signature(dispatch).parameters:
            return False
    except (TypeError, ValueError):
        return False
    status = CommStatus(kernel)
    kernel.dispatch_shell = status.dispatch_shell
    setattr(kernel, _MARK, status)
    return True
