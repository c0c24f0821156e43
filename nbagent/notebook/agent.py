"""The kernel's one agent front end: the lazily opened ``Session`` and the live turn views.

Events from the session are routed here, by turn id, to the view of the cell that started the
turn; MCP startup updates also go to every startup status display.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
from collections.abc import Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from nbagent.deliver import deliver
from nbagent.notebook.cellctx import CellContext
from nbagent.notebook.frontend_kind import Frontend, detect
from nbagent.notebook.views import View
from nbagent.protocol import (
    TERMINAL_TYPES,
    ElicitationRequested,
    Event,
    Interrupt,
    McpLoginCompleted,
    McpLoginRequired,
    McpStartupComplete,
    McpStartupUpdate,
    Op,
    PatchChange,
    SessionConfigured,
    ToolCallBegin,
    UndoCompleted,
    WarningEvent,
)
from nbagent.protocol.bridge import CheckCellsParams, PageReply, PageRequest, UndoCellParams
from nbagent.protocol.ops import OUTSIDE_ENTRY

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from nbagent.config import Config
    from nbagent.core.session import Session
    from nbagent.kit.notebook_server import NotebookServerHandle
    from nbagent.sandbox import SandboxMode, SandboxPolicy
    from nbagent.tools.notebook import NotebookTools
    from nbagent.tools.patch import PatchTools
    from nbagent.tools.shell import ShellTools

T = TypeVar("T")
_log = logging.getLogger("nbagent.notebook")


class KernelAgent:
    def __init__(self, shell: InteractiveShell, session_factory: Callable[[], Session] | None = None) -> None:
        self.shell = shell
        self._factory = session_factory or self._default_session
        self.session: Session | None = None
        self.error: str | None = None
        self.configured: SessionConfigured | None = None
        self.views: dict[str, View] = {}
        self.cells: dict[str, CellContext] = {}
        """The context of the cell each turn was started from: its view's widget updates are sent
        as that cell's messages, so a client recording the cell (nbclient saving widget state for
        a rendered page) sees them, not only the cell that opened the session."""
        self.watchers: list[View] = []
        self.session_warnings: list[str] = []
        """The session's warnings outside any turn, as shown (redacted), for ``%agent status``."""
        """Views that see session-level events (startup status displays)."""
        self.endings: dict[str, asyncio.Future[Event]] = {}
        self._opening: asyncio.Future[Session] | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self.frontend_override: Frontend | None = None
        self.tasks: set[asyncio.Task[Any]] = set()
        self.outside_view: View | None = None
        """Where calls outside any turn show (an outside agent's calls through ``%agent serve``)."""
        self.server: NotebookServerHandle | None = None
        """What ``%agent serve`` is serving, until ``--stop``."""
        self.notebook_tools: NotebookTools | None = None
        """The session's ``NotebookTools`` (``None`` with a custom session factory)."""
        self.patch_tools: PatchTools | None = None
        """The session's ``apply_patch`` (``None`` with a custom session factory)."""
        self.shell_tools: ShellTools | None = None
        """The session's ``shell`` tool (``None`` with a custom session factory)."""
        self.config: Config | None = None
        """The config the native tools were made from: the sandbox keys a turn's own sandbox
        and ``%agent`` status start from."""
        self._outside_turns: set[str] = set()
        """Turn ids of calls made from outside any model turn (``Session.call_tool``)."""
        self.context_on = False
        """The model sees the notebook's cells and the kernel's names (``%agent context on``)."""
        self.code_answers = False
        """Notebook code answers this kernel's approvals and questions (``nbagent.notebook.answers_asks``,
        the walkthroughs' autopilot): with no notebook UI, a turn asks only then; else it declines
        each ask at once."""

    # -- the session -----------------------------------------------------------------------

    def _default_session(self) -> Session:
        from nbagent.core.session import Session

        session = Session(
            cwd=os.getcwd(),
            interactive=True,
            entry="magic",
            notebook_path=os.environ.get("JPY_SESSION_NAME") or None,
        )
        self._add_native_tools(session, os.getcwd())
        return session

    def _add_native_tools(self, session: Session, cwd: str) -> None:
        """The notebook tools (through the JupyterLab extension's bridge), ``run_python`` and
        ``shell`` in the sandbox the session's config gives its MCP servers, and ``apply_patch``
        writing only where that sandbox may write."""
        from nbagent.config import load_config
        from nbagent.notebook.bridge import get_bridge
        from nbagent.tools import ShellTools, native_tools, shell_policy
        from nbagent.tools.patch import PatchTools

        self.notebook_tools, python_tools = native_tools(get_bridge(), self.shell, lambda: session.snapshot().call_ids)
        get_bridge().serve_page(self.page_request)
        session.add_provider(python_tools)
        session.add_provider(self.notebook_tools)
        self.config = load_config(cwd)
        policy = shell_policy(self.config)
        self.shell_tools = ShellTools(policy)
        session.add_provider(self.shell_tools)
        self.patch_tools = PatchTools.within(policy)
        session.add_provider(self.patch_tools)

    async def preview(self, tool: str, arguments: dict[str, Any]) -> list[PatchChange]:
        """What a call of one of this kernel's own tools would change now: an approval panel's
        edited arguments diffed again. Nothing for another source's tool."""
        for provider in (self.notebook_tools, self.patch_tools):
            spec = next((s for s in provider.list_tools() if s.name == tool), None) if provider is not None else None
            if provider is not None and spec is not None:
                return await provider.preview(spec, arguments)
        return []

    def turn_sandbox(self, mode: SandboxMode | None) -> SandboxPolicy | None:
        """The sandbox of a turn's ``shell`` commands in ``mode`` (``%%agent --sandbox``), with
        the session's other sandbox keys; refused (``RequirementError``) where the
        administrator's requirements rule ``mode`` out. ``None``: the session's."""
        config = self.config
        if mode is None or config is None:
            return None
        from nbagent.tools import shell_policy

        config.requirements.check("allowed_sandbox_modes", "sandbox_mode", mode)
        return shell_policy(config.model_copy(update={"sandbox_mode": mode}))

    @contextlib.contextmanager
    def sandboxed(self, turn_id: str, policy: SandboxPolicy | None) -> Iterator[None]:
        """Around a turn: its ``shell`` commands run in ``policy``; MCP servers already started
        keep the sandbox they started in."""
        tools = self.shell_tools
        if policy is None or tools is None:
            yield
            return
        tools.sandbox_turn(turn_id, policy)
        try:
            yield
        finally:
            tools.sandbox_turn(turn_id, None)

    def show_context(self, on: bool) -> None:
        """Turn on or off what the model sees of this notebook at each turn's start."""
        self.context_on = on
        if self.session is not None:
            self.session.set_turn_context(self._workspace if on else None)

    async def _workspace(self) -> str:
        from nbagent.notebook.context import namespace_summary, notebook_summary

        parts = []
        snapshot = await self.notebook_tools.snapshot() if self.notebook_tools is not None else None
        if snapshot is not None:
            parts.append(notebook_summary(snapshot))
        if self.shell is not None:
            parts.append(namespace_summary(self.shell.user_ns))
        return "\n\n".join(parts)

    @contextlib.contextmanager
    def awaited(self, wait: bool) -> Iterator[None]:
        """Around a turn: tell the notebook tools whether its cell awaits it (``--wait``)."""
        tools = self.notebook_tools
        with tools.awaited() if wait and tools is not None else contextlib.nullcontext():
            yield

    def open(self) -> asyncio.Future[Session]:
        """Start opening the session (MCP servers start in the background); idempotent."""
        if self._opening is None or (self._opening.done() and self.session is None):
            self._opening = asyncio.ensure_future(self._open())
        return self._opening

    async def _open(self) -> Session:
        self.error = None
        try:
            session = self._factory()
            self._unsubscribe = session.subscribe(self._on_event)
            await session.__aenter__()
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}" if not str(exc).startswith(type(exc).__name__) else str(exc)
            if self._unsubscribe is not None:
                self._unsubscribe()
            raise
        self.session = session
        self.show_context(self.context_on)  # turned on before the session opened
        return session

    @property
    def opening(self) -> bool:
        return self._opening is not None

    async def ready(self) -> Session:
        return await asyncio.shield(self.open())

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        if self.session is not None:
            await self.session.shutdown()
        if self._unsubscribe is not None:
            self._unsubscribe()
        self.session = None
        self._opening = None

    def frontend(self) -> Frontend:
        return self.frontend_override or detect(self.shell)

    def spawn(self, coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """A background task kept alive until it ends (the loop holds only weak references)."""
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    # -- ops -------------------------------------------------------------------------------

    def submit(self, op: Op) -> str:
        if self.session is None:
            raise RuntimeError("the agent session is not open yet")
        return self.session.submit(op)

    def undo(self, turn_id: str, report: Callable[[bool, str], None]) -> None:
        """Undo ``turn_id`` (its view's "Undo turn" button); ``report(done, message)`` says what
        was restored, or why nothing was."""

        async def job() -> None:
            try:
                done = await self.undo_turn(await self.ready(), turn_id)
                report(done.success, done.message)
            except Exception as exc:  # boundary: said on the turn's header, never raised into the widget
                report(False, f"undo failed: {exc}")

        self.spawn(job())

    async def page_request(self, request: PageRequest) -> PageReply:
        """A badge's "Undo" clicked in the page (``check_cell``: whether to show it; ``check_cells``:
        the badges a page shows as it loads): its thread must be this one; the call is looked up
        in the rollout, never taken from the page on trust."""
        from nbagent.checkpoint import UndoRefused
        from nbagent.checkpoint.cells import cell_calls, check_call

        session = await self.ready()
        thread = session.snapshot().thread_id

        def reply(ok: bool, message: str, confirmed: list[bool] | None = None) -> PageReply:
            return PageReply(page_id=request.page_id, ok=ok, message=message, confirmed=confirmed)

        if request.method == "check_cells":
            asked = CheckCellsParams.model_validate(request.params).cells
            live = {(c.turn_id, c.call_id) for c in cell_calls(session.snapshot().items)}  # what check_call passes
            confirmed = [c.thread_id == thread and (c.turn_id, c.call_id) in live for c in asked]
            return reply(True, f"{sum(confirmed)} of {len(asked)} confirmed", confirmed)
        params = UndoCellParams.model_validate(request.params)
        if params.thread_id != thread:
            return reply(False, f"nothing undone: the cell was written in thread {params.thread_id[:80]!r}, not this kernel's")
        if request.method == "check_cell":
            try:
                check_call(session.snapshot().items, params.turn_id, params.call_id)
            except UndoRefused as exc:
                return reply(False, str(exc))
            return reply(True, "can be undone")
        done = await self.undo_turn(session, params.turn_id, call_id=params.call_id)
        return reply(done.success, done.message)

    async def undo_turn(self, session: Session, turn_id: str | None, force: bool = False,
                        call_id: str | None = None) -> UndoCompleted:
        """Undo ``turn_id`` (or only its call ``call_id``): the cells it changed in this notebook,
        live through the extension (when it is here), then its workspace files, recorded as one
        ``UndoItem``."""
        from nbagent.checkpoint import UndoRefused
        from nbagent.checkpoint.cells import call_undo_op, undo_op

        tools = self.notebook_tools
        bridge = tools.bridge if tools is not None and await tools.bridge.available() else None
        hello = getattr(bridge, "hello", None)
        path = (hello.path if hello is not None else "") or os.environ.get("JPY_SESSION_NAME", "")
        try:
            if call_id is not None:
                if bridge is None or turn_id is None:
                    raise UndoRefused("a cell is put back through the notebook's extension, which is not here")
                op = await call_undo_op(session.snapshot().items, bridge, turn_id, call_id, force=force)
            else:
                op = await undo_op(session.snapshot().items, bridge, turn_id, force=force,
                                   is_notebook=lambda p: bool(path) and (path.endswith("/" + p) or path == p))  # fmt: skip
        except UndoRefused as exc:
            return UndoCompleted(success=False, message=f"nothing undone: {exc}", undone_turn_id=turn_id)
        done = await session.perform(op)
        assert isinstance(done, UndoCompleted)
        return done

    def stop(self, turn_id: str | None = None) -> bool:
        """Interrupt the running turn, or ``turn_id``'s whether running or still queued."""
        session = self.session
        if session is None:
            return False
        now = session.snapshot()
        running = turn_id in now.queued or (now.running and turn_id in (None, now.current_turn_id))
        session.submit(Interrupt(reason="stopped by the user", turn_id=turn_id))
        return running

    # -- events ----------------------------------------------------------------------------

    def watch_turn(self, turn_id: str, view: View) -> asyncio.Future[Event]:
        """Route ``turn_id``'s events to ``view``; the future ends with its terminal event."""
        self.views[turn_id] = view
        self.cells[turn_id] = CellContext()
        future: asyncio.Future[Event] = asyncio.get_running_loop().create_future()
        self.endings[turn_id] = future
        return future

    def _on_event(self, event: Event) -> None:
        """``event`` comes as the rollout holds it (``Session.subscribe``): a cell's output is
        saved with the notebook, and what it shows while text streams is seen. It goes to the view
        of its turn (and to startup displays); its turn's end closes it."""
        msg = event.msg
        if isinstance(msg, SessionConfigured):
            self.configured = msg
        turn_id = event.turn_id
        # A session's own warning (a config file not read, a key not honoured) comes before any
        # turn: the startup display shows it, else nobody would.
        session_warning = isinstance(msg, WarningEvent) and turn_id is None
        if isinstance(msg, WarningEvent) and session_warning:
            self.session_warnings.append(msg.message)
        if session_warning or isinstance(msg, (McpStartupUpdate, McpStartupComplete, McpLoginRequired, McpLoginCompleted)):
            for watcher in list(self.watchers):
                deliver(watcher.handle, event, _log)  # a rendering bug must not break the event flow
        if turn_id is None and isinstance(msg, ElicitationRequested) and self.session is not None:
            turn_id = self.session.snapshot().current_turn_id
        view = self.views.get(turn_id) if turn_id else None
        if view is None and msg.type in _OUTSIDE_TYPES and self._is_outside(event, turn_id):
            view = self.outside_view
        if view is not None:
            cell = self.cells.get(turn_id) if turn_id else None
            deliver(view.handle if cell is None else functools.partial(cell.run, view.handle), event, _log)
        if turn_id and msg.type in TERMINAL_TYPES:
            self.views.pop(turn_id, None)
            self.cells.pop(turn_id, None)
            future = self.endings.pop(turn_id, None)
            if future is not None and not future.done():
                future.set_result(event)

    def _is_outside(self, event: Event, turn_id: str | None) -> bool:
        """A call from outside any model turn (an outside agent through ``%agent serve``): it runs
        as a one-call turn of its own, announced by a ``tool_call_begin`` whose entry is
        ``OUTSIDE_ENTRY`` and which has no view of its own. Its later events (approval, progress,
        end) follow that turn id."""
        if turn_id is None:
            return True
        if turn_id in self._outside_turns:
            if event.msg.type == "tool_call_end":
                self._outside_turns.discard(turn_id)
            return True
        if isinstance(event.msg, ToolCallBegin) and event.msg.entry == OUTSIDE_ENTRY:
            self._outside_turns.add(turn_id)
            return True
        return False


_OUTSIDE_TYPES = {
    "tool_call_begin", "tool_call_end", "progress", "exec_command_output_delta", "approval_requested", "approval_resolved",
    "elicitation_requested", "elicitation_resolved", "patch_apply_begin", "patch_apply_end",
}
