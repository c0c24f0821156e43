"""``Session``: what every front end drives: ops in (``submit``, ``perform``), events out
(``subscribe``, ``events``), and one read-only ``snapshot()`` of what there is to poll.

A session holds its current thread (a ``ThreadState``), its MCP servers, the tool router and
the approval and elicitation desks, all private. Each op has one handler (``handlers.py``);
turns run one after another as tasks on the caller's event loop, each with a ``TurnContext``
that sees only what a turn needs. The core never knows which front end it serves. The surface
front ends may use is listed in docs/contracts.md and pinned by tests/test_public_api.py.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from nbagent.config import (
    Config,
    ConfigError,
    McpServerConfig,
    hold,
    load_config,
)
from nbagent.config.project_docs import ProjectDocs
from nbagent.core.approval import ApprovalDesk
from nbagent.core.audit import AuditTrail, audit_log
from nbagent.core.bus import EventBus
from nbagent.core.context import ContextBudget
from nbagent.core.elicitation import ElicitationDesk
from nbagent.core.function_tools import FunctionTools
from nbagent.core.handlers import HANDLERS, OpFailed, OpRejected, answer_now, ask_key, ending_event
from nbagent.core.inspect import Inspector
from nbagent.core.instructions import instructions, project_docs
from nbagent.core.otel import exporting, finish, start_export
from nbagent.core.provider import ToolProvider
from nbagent.core.request_tools import RequestTools
from nbagent.core.router import ToolRouter
from nbagent.core.run_result import RunResult, TurnEvents
from nbagent.core.servers import McpServers
from nbagent.core.session_config import configure_servers, files_now, recorded_always, write_always
from nbagent.core.snapshot import SessionSnapshot, frozen_map
from nbagent.core.thread import ThreadState
from nbagent.core.thread_settings import adopt
from nbagent.core.turn import TurnOutcome, run_turn
from nbagent.core.turn_context import Checkpoints, TurnContext, TurnSettings, TurnState, sooner
from nbagent.core.usage import TokenMeter
from nbagent.mcp.manager import McpConnectionManager
from nbagent.mcp.sandboxed import permissions
from nbagent.models.base import ModelClient, ModelError
from nbagent.models.factory import make_model
from nbagent.protocol import (
    ApprovalDecision,
    ApprovalMode,
    AskUnanswered,
    ElicitationRequested,
    ElicitationResponse,
    Entry,
    ErrorEvent,
    Event,
    EventMsg,
    Interrupt,
    Op,
    Policy,
    SessionConfigured,
    Shutdown,
    ShutdownComplete,
    ThreadMeta,
    ToolSpec,
    TurnAborted,
    TurnFailed,
    UserTurn,
    WarningEvent,
    unicode_text,
)
from nbagent.protocol.elicitation import ElicitOutcome
from nbagent.secrets import EventRedactor, redacted
from nbagent.store import RolloutWriteError, ThreadStore
from nbagent.store.inspect_files import InspectFiles

log = logging.getLogger(__name__)

class Session:
    def __init__(
        self,
        *,
        model: str | None = None,
        policy: Policy | None = None,
        cwd: str | Path | None = None,
        home: str | Path | None = None,
        thread: str | None = None,
        thread_name: str | None = None,
        config: Config | None = None,
        mcp_servers: dict[str, McpServerConfig] | None = None,
        interactive: bool = False,
        entry: Entry = "python",
        notebook_path: str | None = None,
    ) -> None:
        self._cwd = str(Path(cwd or os.getcwd()).resolve())
        overrides: dict[str, Any] = {"model": model, "approval_policy": policy, "home": str(home) if home else None}
        self._given = {key for key in ("model", "approval_policy") if overrides[key] is not None}
        """What the caller named; the rest of a resumed thread's settings are the thread's own."""
        if config is None:
            self._config = load_config(self._cwd, overrides=overrides)
        else:  # a copy (keeping its sources and key): per-session settings never leak back
            config.requirements.check_turn(policy=policy, model=model)
            self._config = config.model_copy(update={k: v for k, v in overrides.items() if v is not None})
        if mcp_servers:
            configure_servers(self._config, mcp_servers, self._config)
        self._interactive = interactive
        """Whether someone can answer asks, unless a turn says otherwise (``UserTurn.interactive``)."""
        self._entry: Entry = entry
        self._bus = EventBus()
        self._router = ToolRouter()
        self._functions = FunctionTools()
        self._router.add(self._functions)
        self._store = ThreadStore(self._config.home_path)
        self._checkpoints = Checkpoints(self._cwd, str(self._store.home))  # per session: every outside call is a turn
        self._thread = ThreadState(
            self._store, self._config, self._bus, cwd=self._cwd, notebook_path=notebook_path,
            busy=lambda: self._running, announce=self._configured,
        )
        self._bus.shown = EventRedactor(self._thread.redactor)
        self._approvals = ApprovalDesk(
            self._bus, self._thread.record, lambda spec: write_always(self._config, self._cwd, spec, self._warn),
            lambda spec: recorded_always(self._config, spec),
        )
        self._elicitations = ElicitationDesk(self._bus, self._thread.record)
        self._mcp = McpConnectionManager(
            self._config.mcp_servers,
            on_event=self._bus.emit,
            on_elicit=self._on_elicit,
            log_dir=self._config.home_path / "logs",
            config=self._config,
        )
        self._servers = McpServers(self._mcp, self._server_configured)
        self._inspector = Inspector(self._thread.redactor, lambda: InspectFiles(self._store.threads_dir, self._thread.id) if self._thread.stored else None)
        """The last request and the last turns' events, for ``inspect`` (DESIGN §12.3)."""
        self._inspector.follow(lambda: self._thread.items, lambda: self._current_turn_id)
        self._bus.watch(self._inspector.on_event)
        self._router.add(self._mcp)
        self._notes: list[str] = []  # said as the session opens, with the config's warnings
        self._export = start_export(self._config, self._bus, lambda text: self._thread.redactor().text(text), self._notes.append)
        self._bus.watch(AuditTrail(  # every decision, call end, answer and sign-in, one line each
            exporting(audit_log(self._config), self._export),
            spec_of=lambda name: found[0] if (found := self._router.catalogue().get(name)) else None,
            policy=lambda: self._config.approval_policy, redact=lambda text: self._thread.redactor().text(text),
        ))
        self._meter = TokenMeter(self._config.home_path, self._warn, self._config.requirements)
        """The user's tokens per day, across kernels (``%agent`` reads the day from it)."""
        self._request_tools = RequestTools(self._config.max_model_tools, lambda text: self._thread.redactor().text(text))
        """Past ``max_model_tools``, what each request carries and ``search_tools`` (DESIGN §4.1)."""
        self._interrupt_reason: str | None = None
        self._requested_thread = thread
        self._first_thread_name = thread_name
        self._models: dict[str, ModelClient] = {}
        self._turn_context: Callable[[], Awaitable[str | None]] | None = None
        self._turns: asyncio.Queue[UserTurn] = asyncio.Queue()
        self._queued: set[str] = set()
        self._skipped: set[str] = set()
        """Queued turns interrupted before they started: the runner drops them."""
        self._results: dict[str, tuple[asyncio.Future[RunResult], TurnEvents]] = {}
        self._bus.watch(self._heard)
        self._ops: set[asyncio.Future[EventMsg]] = set()
        """Submitted ops still running (kept so none is collected before it ends)."""
        self._announced: SessionConfigured | None = None
        self._current: tuple[UserTurn, asyncio.Task[TurnOutcome]] | None = None
        self._runner: asyncio.Task[None] | None = None
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> Session:
        for message in [*self._config.warnings, *self._notes]:  # keys read but not honoured, each named once
            self._warn(message)
        self._servers.start()
        try:
            if self._requested_thread:
                await self._thread.resume(self._requested_thread, self._adopt)
            else:
                await self._thread.new(self._first_thread_name)
        except BaseException:  # no thread (busy, a full disk): the servers started must not outlive it
            await self.shutdown()
            raise
        self._runner = asyncio.ensure_future(self._run_turns())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    async def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._interrupt("the session is shutting down")
        if self._current is not None:
            await asyncio.gather(self._current[1], return_exceptions=True)
        if self._runner is not None:
            self._runner.cancel()
            await asyncio.gather(self._runner, return_exceptions=True)
        for future, _ in self._results.values():
            if not future.done():
                future.cancel()
        await self._servers.aclose()
        await self._router.aclose(closed=(self._mcp,))
        for client in self._models.values():
            await client.aclose()
        self._thread.close()
        self._store.close()
        await finish(self._export)
        self._bus.emit(ShutdownComplete())
        self._bus.close()

    @classmethod
    def run_sync(cls, prompt: str, **kwargs: Any) -> RunResult:
        """One turn from a script with no running event loop."""

        async def main() -> RunResult:
            async with cls(**kwargs) as session:
                return await session.run(prompt)

        return asyncio.run(main())

    # -- ops in, events out -----------------------------------------------------------------

    def submit(self, op: Op) -> str:
        """Hand the session one op; returns its id (the turn id for a ``UserTurn``). Each op type
        has one handler (docs/contracts.md); what it did comes back as events, a failure as an
        ``error`` event naming the op. Answers act at once: one the session turns down raises
        ``OpRejected`` (and is a ``warning`` event), its ask still waiting."""
        if isinstance(op, UserTurn):
            self._queued.add(op.turn_id)
            self._turns.put_nowait(op)
            return op.turn_id
        if isinstance(op, ApprovalDecision | ElicitationResponse | AskUnanswered):
            answer_now(self, op)
            return ask_key(op)
        if isinstance(op, Interrupt):
            self._interrupt(op.reason, turn_id=op.turn_id)
            return op.turn_id or "interrupt"
        if isinstance(op, Shutdown):
            asyncio.ensure_future(self.shutdown())
            return "shutdown"
        if not inspect.iscoroutinefunction(HANDLERS.get(type(op))):  # it only reads: answered now
            try:
                HANDLERS[type(op)](self, op)
            except Exception as exc:  # noqa: BLE001 - an error event, as for any submitted op
                self._report(op, exc)
            return op.type
        task = asyncio.ensure_future(self.perform(op))
        task.add_done_callback(lambda done: self._report(op, None if done.cancelled() else done.exception()))
        self._ops.add(task)
        task.add_done_callback(self._ops.discard)
        return op.type

    async def perform(self, op: Op) -> EventMsg:
        """Run ``op``'s handler to its end and return the event it ended with (as subscribers
        see it, redacted). What stops it is raised with a note naming the op: ``OpFailed`` when
        the op cannot be done now, ``OpRejected`` for an answer turned down, or the error itself
        (a ``ConfigError`` when no model is configured)."""
        handler = HANDLERS.get(type(op))
        if handler is None:  # a turn, an answer, an interrupt or shutdown: ended by an event
            if (ends := ending_event(op)) is None:
                raise TypeError(f"not an op: {op!r}")
            return await self._ending(op, ends)
        try:
            answer = handler(self, op)
            msg = await answer if inspect.isawaitable(answer) else answer
        except Exception as exc:  # its own kind kept (a ConfigError stays one), the op named
            exc.add_note(f"while doing the op {op.type!r}")
            raise
        return redacted(msg, self._thread.redactor())

    async def _ending(self, op: Op, ends: Callable[[Event], bool]) -> EventMsg:
        """Submit ``op`` and wait for the first event ``ends`` picks, as subscribers see it."""
        future: asyncio.Future[EventMsg] = asyncio.get_running_loop().create_future()

        def watch(event: Event) -> None:
            if not future.done() and ends(event):
                future.set_result(event.msg)

        unsubscribe = self._bus.subscribe(watch)
        try:
            if isinstance(op, Interrupt):  # nothing to interrupt: no event would ever come
                if not self._interrupt(op.reason, turn_id=op.turn_id):
                    raise OpFailed("interrupt failed: no such turn is running or queued")
            else:
                self.submit(op)
            return await future
        finally:
            unsubscribe()

    def _report(self, op: Op, exc: BaseException | None) -> None:
        """A submitted op that failed is an ``error`` event naming it."""
        if exc is not None:
            self._bus.emit(ErrorEvent(message=f"{op.type} failed: {self._shown(exc, kind=False)}", code=op.type))

    def _emit(self, msg: EventMsg) -> EventMsg:
        self._bus.emit(msg)
        return msg

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``callback`` with every event from now on, in order, inside the emit (a renderer
        has shown an event before the next is made); returns the unsubscriber. Front ends use this.
        Events come redacted as the thread's rollout is (streamed text by its stream), so no front
        end shows a secret a server handed back or the model repeated."""
        return self._bus.subscribe(callback)

    def events(self) -> AsyncIterator[Event]:
        """The same events (redacted alike) as an async iterator for scripts (``async for``): from
        this call on (not from the first ``__anext__``) until shutdown."""
        return self._bus.events()

    def snapshot(self) -> SessionSnapshot:
        """What a front end reads of the session now, as one read-only value."""
        thread, config = self._thread, self._config
        items = thread.items
        budget = ContextBudget.of(config, self._model_name)
        return SessionSnapshot(
            thread_id=thread.id, thread_name=thread.name, thread_stored=thread.stored, items=tuple(items),
            call_ids=frozenset(thread.call_ids), context_tokens=thread.context.estimate(items),
            context_window=budget.window, context_limit=budget.limit, thread_usage=thread.usage, policy=config.approval_policy,
            model_name=self._model_name, cwd=self._cwd, interactive=self._interactive, running=self._running,
            current_turn_id=self._current_turn_id, queued=frozenset(self._queued), servers=frozen_map(self._servers.status()),
            pending_approvals=frozen_map(self._approvals.requests()),
            pending_elicitations=frozen_map(self._elicitations.requests()), tools=tuple(self._tools()),
            home=config.home_path, instructions=config.instructions, project_docs=self._project_docs(),
            tool_output_max_bytes=config.tool_output_max_bytes,
            max_model_tools=config.max_model_tools, mcp_servers=frozen_map(config.mcp_servers),
            approved=self._approvals.memory.definitions(), redactor=thread.redactor(),
        )

    def _warn(self, message: str) -> None:
        self._bus.emit(WarningEvent(message=message))

    def _start(self, op: UserTurn) -> asyncio.Future[RunResult]:
        """Submit a turn; the future resolves, from its events, at its end."""
        future: asyncio.Future[RunResult] = asyncio.get_running_loop().create_future()
        self._results[op.turn_id] = (future, TurnEvents())
        self.submit(op)
        return future

    async def run(
        self,
        prompt: str,
        *,
        entry: Entry | None = None,
        model: str | None = None,
        policy: Policy | None = None,
        interactive: bool | None = None,
        ask_timeout_sec: float | None = None,
    ) -> RunResult:
        """Run one turn to its end; the result is what its events said. Cancelling this await
        interrupts the turn."""
        op = UserTurn(prompt=prompt, entry=entry or self._entry, model=model, policy=policy, interactive=interactive,
                      ask_timeout_sec=ask_timeout_sec)
        future = self._start(op)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # Running or still queued: either way the turn no one waits for must not go on.
            self._interrupt("the caller stopped waiting", turn_id=op.turn_id)
            raise

    def _interrupt(self, reason: str = "interrupted", *, turn_id: str | None = None) -> bool:
        """Cancel the running turn (or ``turn_id``, running or queued); pending approvals are
        denied and questions cancelled. ``False`` when there was nothing to cancel."""
        if turn_id is not None and turn_id in self._queued:
            self._queued.discard(turn_id)
            self._skipped.add(turn_id)
            self._bus.emit(TurnAborted(reason=reason), turn_id=turn_id)
            self._finish(turn_id, len(self._thread.items))
            return True
        if turn_id is not None and turn_id != self._current_turn_id:
            return False
        self._elicitations.cancel_all()
        if self._current is None or self._current[1].done():
            return False
        self._interrupt_reason = reason
        self._current[1].cancel()
        return True

    def _cancel_asks(self) -> None:
        """Close every open question; an approval's own wait ends with its turn task."""
        self._approvals.cancel_all()
        self._elicitations.cancel_all()

    # -- state -----------------------------------------------------------------------------

    @property
    def _model_name(self) -> str:
        return self._config.model or ""

    @property
    def _running(self) -> bool:
        return self._current is not None and not self._current[1].done()

    @property
    def _current_turn_id(self) -> str | None:
        return self._current[0].turn_id if self._current is not None else None

    def model_client(self, model: str | None = None) -> ModelClient:
        """The client a turn on ``model`` (default: the session's) uses: its label, or a script
        that wraps it."""
        name = model or self._config.require_model()
        if name not in self._models:
            self._models[name] = self._inspector.watch(make_model(self._config, name, cwd=self._cwd))
        return self._models[name]

    def _tools(self, *, complete: bool = False) -> list[ToolSpec]:
        """The model-visible catalogue. In one larger than ``max_model_tools`` an MCP tool's
        schema is made when the tool first goes into a model request (``spec.deferred``);
        ``complete`` makes every one now (seconds for tens of thousands of tools)."""
        if complete:
            return self._router.for_model(self._router.catalogue().values())
        return list(self._router.specs())

    def register_tool(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        read_only: bool = False,
        destructive: bool | None = None,
        approval_mode: ApprovalMode = "auto",
    ) -> ToolSpec:
        """Expose a Python function (sync or async) to the model, through the same approvals."""
        return self._functions.register(
            fn, name=name, description=description, read_only=read_only, destructive=destructive,
            approval_mode=approval_mode,
        )

    def add_provider(self, provider: ToolProvider) -> None:
        """Native tools come before MCP tools in the catalogue."""
        self._router.add(provider, first=True)

    def set_turn_context(self, source: Callable[[], Awaitable[str | None]] | None) -> None:
        """What each turn, as it starts, adds to the instructions about the workspace (the
        notebook's cells and names); ``None`` turns it off. A failing source is a warning."""
        self._turn_context = source

    def _project_docs(self) -> ProjectDocs:
        return project_docs(self._config, self._cwd)

    def _instructions(self, docs: ProjectDocs, sandbox: str) -> str:
        return instructions(self._config, docs, sandbox, capped=self._request_tools.capped(self._router.catalogue()),
                            servers=self._mcp.instructions(), redact=lambda text: self._thread.redactor().text(text))

    def _turn(self, turn_id: str, model: ModelClient | None, model_name: str, policy: Policy, entry: Entry,
              interactive: bool | None, ask_timeout: float | None = None) -> TurnContext:
        """The narrow view of this session one turn (or one outside call) runs in; ``interactive``
        ``None`` follows ``self._interactive`` as it changes."""
        read: list[tuple[ProjectDocs, str]] = []

        def instructions() -> str:
            if not read:  # once per turn, at its first model request
                read.append((self._project_docs(), permissions(self._config)))
            return self._instructions(*read[0])

        return TurnContext(
            turn_id=turn_id, model=model, model_name=model_name, policy=policy, router=self._router,
            asks=self._approvals, thread=self._thread, bus=self._bus, settings=TurnSettings.of(self._config, ask_timeout),
            instructions=instructions, servers_ready=self._servers.ready,
            preamble=self._turn_context, request_tools=self._request_tools, meter=self._meter,
            checkpoints=self._checkpoints,
            stop_reason=lambda: self._interrupt_reason, cancel_asks=self._cancel_asks, entry=entry,
            interactive=lambda: self._interactive if interactive is None else interactive,
            state=TurnState(budget=ContextBudget.of(self._config, model_name) if model is not None else ContextBudget()),
        )

    # -- thread announcements and remembered approvals ---------------------------------------

    def _adopt(self, meta: ThreadMeta) -> None:
        """The thread this session opened runs on as it ran, but for what the caller named."""
        for message in adopt(self._config, meta, model_given="model" in self._given,
                             policy_given="approval_policy" in self._given) + hold(self._config):
            self._warn(message)

    def _configured(self, resumed: int) -> SessionConfigured:
        label, scripted, problem = self._model_name or "no model configured", False, None
        try:
            if self._model_name:
                client = self.model_client()
                label, scripted = client.label, client.scripted
        except (ConfigError, ModelError) as exc:
            problem = str(exc)
        self._announced = announced = SessionConfigured(
            model=self._model_name, model_label=label, scripted=scripted, policy=self._config.approval_policy,
            cwd=self._cwd, thread_name=self._thread.name, resumed_items=resumed,
        )
        self._bus.emit(announced)
        if problem is not None:  # after the announcement, as every front end shows it
            self._bus.emit(ErrorEvent(message=problem, code="config"))
        for message in self._store.take_warnings():
            self._bus.emit(WarningEvent(message=message))
        return announced

    async def _switching(self, switch: Awaitable[str]) -> SessionConfigured:
        """Open another thread; what the session announced for it."""
        await switch
        assert self._announced is not None, "opening a thread announces it"
        return self._announced

    def _server_configured(self, name: str, cfg: McpServerConfig | None) -> None:
        """A server added or removed while the session runs (``%agent mcp add``) is in the
        session's config as in the manager's: its secret-named env values join the rollout's
        redaction set (what was hidden stays hidden), its remembered approvals are read, and an
        "Always" for it goes to the file it was added to."""
        configure_servers(self._config, {name: cfg}, None if cfg is None else files_now(self._cwd))
        self._thread.refresh_secrets()

    async def _on_elicit(self, request: ElicitationRequested) -> ElicitOutcome:
        op = self._current[0] if self._current else None
        policy = (op.policy if op else None) or self._config.approval_policy
        interactive = op.interactive if op is not None and op.interactive is not None else self._interactive
        return await self._elicitations.ask(
            request,
            turn_id=self._current_turn_id,
            policy=policy,
            interactive=interactive,
            timeout=sooner(self._config.elicitation_timeout_sec, op.ask_timeout_sec if op else None),
        )

    # -- the turn runner -------------------------------------------------------------------

    async def _run_turns(self) -> None:
        while True:
            op = await self._turns.get()
            self._queued.discard(op.turn_id)
            if op.turn_id in self._skipped:
                self._skipped.discard(op.turn_id)
                continue
            start = len(self._thread.items)
            try:
                await self._run_turn(op)
            except Exception as exc:  # noqa: BLE001 - a turn that cannot even record its end still ends; the runner goes on
                self._stopped(op.turn_id, exc)
            self._finish(op.turn_id, start)

    async def _run_turn(self, op: UserTurn) -> TurnOutcome:
        try:
            name = op.model or self._config.require_model()
            self._config.requirements.check_turn(policy=op.policy, model=op.model)
            client = self.model_client(name)
        except (ConfigError, ModelError) as exc:
            code = exc.code if isinstance(exc, ModelError) else "config"
            self._bus.emit(TurnFailed(message=str(exc), code=code), turn_id=op.turn_id)
            return TurnOutcome(op.turn_id, "failed", error=str(exc), error_code=code)
        self._interrupt_reason = None
        self._mcp.refresh_secrets()  # as the rollout does: a secret set since is kept from servers too
        turn = self._turn(op.turn_id, client, name, op.policy or self._config.approval_policy, op.entry, op.interactive, op.ask_timeout_sec)
        task = asyncio.ensure_future(run_turn(turn, op))
        self._current = (op, task)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.cancelled():
                raise
            # Cancelled in its last step, after it recorded and announced the abort.
            return TurnOutcome(op.turn_id, "aborted", error=self._interrupt_reason)
        finally:
            self._current = None

    def _stopped(self, turn_id: str, exc: Exception) -> TurnOutcome:
        """The end of a turn that raised instead of ending, its failure announced once: a record
        that could not be written (a full disk, a line that cannot be encoded) stops the turn,
        never the runner, so the caller and every later turn go on. Only an unforeseen fault
        has its traceback logged."""
        if isinstance(exc, RolloutWriteError):
            message, code = f"the turn stopped: {exc}", "storage"
        else:
            log.debug("turn %s stopped", turn_id, exc_info=exc)
            message, code = f"the turn stopped: internal error: {self._shown(exc)}", "internal"
        self._bus.emit(TurnFailed(message=message, code=code), turn_id=turn_id)
        return TurnOutcome(turn_id, "failed", error=message, error_code=code)

    def _shown(self, exc: BaseException, *, kind: bool = True) -> str:
        """``exc`` as it may be shown: redacted (it may quote a reply or a server), or only its
        kind when redacting is what fails. ``kind=False``: an error of the op's own (``OpFailed``,
        ``OpRejected``) says only its text."""
        try:
            told = kind or not isinstance(exc, OpFailed | OpRejected)
            return unicode_text(self._thread.redactor().text(f"{type(exc).__name__}: {exc}" if told else str(exc)))
        except Exception:  # noqa: BLE001 - a text that cannot be checked for secrets is not shown
            return f"{type(exc).__name__} (its text is not shown: it could not be checked for secrets)"

    def _finish(self, turn_id: str, start: int) -> None:
        waiting = self._results.pop(turn_id, None)
        if waiting is not None and not waiting[0].done():
            waiting[0].set_result(waiting[1].result(self._thread.id, turn_id, self._thread.items[start:]))

    def _heard(self, event: Event) -> None:
        """What an awaited turn says, kept for its ``RunResult``."""
        if event.turn_id is not None and (waiting := self._results.get(event.turn_id)) is not None:
            waiting[1].add(event.msg)
