"""Sessions kept alive per thread, and the runs (turns) a tool call drives.

Each ``Session`` lives in its own owner task, because MCP client connections inside it must be
entered and exited in one task; a tool-call handler only borrows it. A ``TurnRun`` outlives a
single request in the stateless protocol, where one turn spans several input-required rounds.

A live session holds MCP server processes, so none is kept without bound: it closes when the
MCP client that used it last disconnects, after ``idle_timeout`` without a turn, or when the
``max_sessions`` cap needs room (oldest idle first). Its thread stays on disk; ``get`` resumes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from nbagent.config import Config, load_config
from nbagent.core.handlers import OpRejected
from nbagent.core.session import RunResult, Session
from nbagent.protocol import (
    ApprovalRequested,
    AskUnanswered,
    ElicitationRequested,
    Event,
    Interrupt,
    Op,
    Policy,
    new_id,
)
from nbagent.secrets import redacted
from nbagent.server.asks import Ask
from nbagent.server.forward import Forwarder
from nbagent.server.overrides import NO_OVERRIDES, Overrides, at_least_as_strict, check_overrides
from nbagent.store import ThreadStore
from nbagent.tools import PatchTools, shell_policy


class TurnRunning(Exception):
    """A second call tried to drive a thread whose turn is still running."""


class PoolFull(Exception):
    """Every one of the ``max_sessions`` live sessions is running a turn."""


@dataclass
class Defaults:
    """Server-wide defaults; an ``agent`` call may override them only as ``overrides`` allows."""

    model: str | None = None
    policy: Policy | None = None
    cwd: str | None = None
    home: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    park_timeout: float = 600.0
    """How long a stateless run waits for the client's next round before it is interrupted."""
    ask_timeout: float = 600.0
    """How long each ask of a turn waits for the MCP client's answer before it is settled by
    timeout (never as the user's word) and the turn goes on: a client may vanish silently. Each
    turn passes it as ``UserTurn.ask_timeout_sec``."""
    idle_timeout: float = 300.0
    """A session without a turn for this long is closed (its thread stays resumable)."""
    max_sessions: int = 8
    """Live sessions at most; the oldest idle one is closed to make room."""
    allow_config_override: bool = False
    """Let callers override anything (``--allow-config-override``): they can then run commands."""

    @property
    def server_cwd(self) -> Path:
        return Path(self.cwd or ".").resolve()

    def load_config(self, cwd: Path | str, asked: Overrides = NO_OVERRIDES) -> Config:
        """A thread's config in ``cwd``: the files there, the server's ``-c`` overrides, then the
        caller's (already checked); raises ``ConfigError`` naming the key."""
        merged = {**self.config, **(asked.config or {})}
        merged.update({"model": asked.model or merged.get("model") or self.model,
                       "approval_policy": asked.policy or merged.get("approval_policy") or self.policy,
                       "home": merged.get("home") or self.home})
        return load_config(cwd, overrides=merged)


class TurnRun:
    """One turn driven by one or more tool-call rounds; events queue up between rounds."""

    def __init__(
        self, handle: ThreadHandle, prompt: str, model: str | None, policy: Policy | None, interactive: bool,
        ask_timeout: float,
    ) -> None:
        self.handle = handle
        self.session = handle.session
        self.token = new_id("run")
        self.queue: asyncio.Queue[Event] = asyncio.Queue()
        self._unsubscribe = self.session.subscribe(self.queue.put_nowait)
        self.answered: set[str] = set()
        self.sent: dict[str, Ask] = {}
        self._park: asyncio.TimerHandle | None = None
        self.task: asyncio.Future[RunResult] = asyncio.ensure_future(self.session.run(
            prompt, entry="mcp_server", model=model, policy=policy, interactive=interactive, ask_timeout_sec=ask_timeout,
        ))
        self.task.add_done_callback(lambda _: self._unsubscribe())

    @property
    def done(self) -> bool:
        return self.task.done() and self.queue.empty()

    def _pending(
        self, kind: Literal["approval", "elicitation"], key: str, msg: ApprovalRequested | ElicitationRequested
    ) -> Ask:
        """A pending ask read from the session's state (not from an event, which comes redacted)
        as the outer client may see it: redacted as the rollout holds it (a tool's description or
        a server's question may carry that server's secret)."""
        shown = redacted(Event.wrap(msg), self.session.snapshot().redactor).msg
        return Ask(kind, key, shown)  # type: ignore[arg-type]  # redacting keeps the event's type

    def _ask_for(self, event: Event) -> Ask | None:
        msg, now = event.msg, self.session.snapshot()
        if isinstance(msg, ApprovalRequested) and msg.call_id in now.pending_approvals:
            ask = Ask("approval", msg.call_id, msg)
        elif isinstance(msg, ElicitationRequested) and msg.request_id in now.pending_elicitations:
            ask = Ask("elicitation", msg.request_id, msg)
        else:
            return None
        return None if ask.wire_key in self.answered else ask

    def open_asks(self) -> list[Ask]:
        """Asks still waiting in the session that no answer has been submitted for."""
        now = self.session.snapshot()
        asks = [self._pending("approval", k, v) for k, v in now.pending_approvals.items()]
        asks += [self._pending("elicitation", k, v) for k, v in now.pending_elicitations.items()]
        return [a for a in asks if a.wire_key not in self.answered]

    def _settles(self, ask: Ask) -> bool:
        """Whether ``ask`` may be settled now: the session still waits for it and nothing has
        been submitted for it (it is settled once)."""
        now = self.session.snapshot()
        waiting = now.pending_approvals if ask.kind == "approval" else now.pending_elicitations
        if ask.wire_key in self.answered or ask.key not in waiting:
            return False
        self.answered.add(ask.wire_key)
        return True

    def answer(self, ask: Ask, op: Op) -> None:
        """Submit the client's answer once, and only while the session still waits for it."""
        if not self._settles(ask):
            return
        try:
            self.session.submit(op)
        except OpRejected:  # the reason is a warning event
            if ask.kind == "elicitation":  # it does not fit the schema: the client is not asked again
                self.session.submit(AskUnanswered(id=ask.key, reason="The MCP client's answer did not fit the question."))

    def unanswered(self, ask: Ask, why: str) -> None:
        """Settle ``ask`` now as nobody answering (the client could not be asked), once, and
        only while the session still waits for it."""
        if self._settles(ask):
            self.session.submit(AskUnanswered(id=ask.key, reason=why))

    async def next(self, forward: Forwarder) -> RunResult | Ask:
        """Forward events until the session waits on a question or the turn has ended."""
        while True:
            if not self.queue.empty():
                event = self.queue.get_nowait()
            elif self.task.done():
                await forward.flush()
                return self.task.result()
            else:
                getter = asyncio.ensure_future(self.queue.get())
                try:
                    either: set[asyncio.Future[Any]] = {getter, self.task}
                    await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    if not getter.done():
                        getter.cancel()
                if getter.cancelled() or not getter.done():
                    continue
                event = getter.result()
            await forward(event)
            ask = self._ask_for(event)
            if ask is not None:
                await forward.flush()
                return ask

    def interrupt(self, reason: str) -> None:
        if not self.task.done():
            self.session.submit(Interrupt(reason=reason))

    def park(self, timeout: float) -> None:
        """Between stateless rounds: interrupt the turn if the client never comes back."""
        self.unpark()
        loop = asyncio.get_running_loop()
        self._park = loop.call_later(timeout, self.interrupt, f"the MCP client did not answer within {timeout:g} s")

    @property
    def parked(self) -> bool:
        """Waiting for the client's next stateless round."""
        return self._park is not None

    def unpark(self) -> None:
        if self._park is not None:
            self._park.cancel()
            self._park = None


@dataclass
class ThreadHandle:
    session: Session
    owner: asyncio.Task[None]
    close: asyncio.Event
    run: TurnRun | None = None
    client: str | None = None
    """The MCP session id of the client that used it last: its disconnect closes this session."""
    last_used: float = field(default_factory=time.monotonic)
    idle: asyncio.TimerHandle | None = None

    @property
    def busy(self) -> bool:
        return self.run is not None and not self.run.task.done()


class SessionPool:
    """Thread id -> live session; also run token -> run for the stateless rounds."""

    def __init__(self, defaults: Defaults | None = None) -> None:
        self.defaults = defaults or Defaults()
        self.threads: dict[str, ThreadHandle] = {}
        self.runs: dict[str, TurnRun] = {}
        self._closing: dict[str, asyncio.Task[None]] = {}
        self._lock = asyncio.Lock()

    async def open(self, asked: Overrides, *, thread_name: str | None = None) -> ThreadHandle:
        """A new thread in a new session, with a caller's overrides (refused when they could
        widen what runs, unless the server allows it)."""
        server_cwd = self.defaults.server_cwd
        if not self.defaults.allow_config_override:
            check_overrides(asked, server=self.defaults.load_config(server_cwd), server_cwd=server_cwd)
        async with self._lock:
            return await self._open(asked, thread_name=thread_name)

    async def _open(
        self, asked: Overrides = NO_OVERRIDES, *, thread_name: str | None = None, thread: str | None = None
    ) -> ThreadHandle:
        """Start a session (a new thread, or ``thread`` resumed) in its own owner task."""
        where = str(Path(asked.cwd or self.defaults.cwd or ".").resolve())
        cfg = self.defaults.load_config(where, asked)
        if thread:
            self._resumed(cfg, thread)
        await self._make_room()
        if thread in self._closing:  # the same thread's last session still writes its rollout
            await asyncio.gather(self._closing[thread], return_exceptions=True)
        ready: asyncio.Future[Session] = asyncio.get_running_loop().create_future()
        close = asyncio.Event()
        # Each turn says who can be asked (its calling client) and bounds its asks; between turns
        # no client is attached, so a question an inner server asks then is declined at once.
        kwargs = dict(cwd=where, thread=thread, thread_name=thread_name, config=cfg, interactive=False,
                      entry="mcp_server")
        owner = asyncio.ensure_future(self._own(kwargs, ready, close))
        session = await ready
        handle = ThreadHandle(session=session, owner=owner, close=close)
        self.threads[session.snapshot().thread_id] = handle
        owner.add_done_callback(lambda _: self._gone(handle))
        self._arm_idle(handle)
        return handle

    @staticmethod
    def _resumed(cfg: Config, thread: str) -> None:
        """A resumed thread keeps its model when the server names none, and the policy of its
        last turn when that is at least as strict as the server's (a caller's ``never`` stays)."""
        with contextlib.suppress(Exception):
            store = ThreadStore(cfg.home_path)
            resolved = store.resolve(thread)
            if resolved:
                loaded = store.load(resolved)
                cfg.model = cfg.model or loaded.meta.model or None
                last = next((t.policy for t in reversed(loaded.turns) if t.status == "started"), None)
                if last is not None and at_least_as_strict(last, cfg.approval_policy):
                    cfg.approval_policy = last
            store.close()

    async def _own(self, kwargs: dict[str, Any], ready: asyncio.Future[Session], close: asyncio.Event) -> None:
        try:
            async with Session(**kwargs) as session:
                session.add_provider(PatchTools.within(shell_policy(kwargs["config"])))  # as ``codex mcp-server`` has it
                ready.set_result(session)
                await close.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(str(exc)))
            if not isinstance(exc, Exception):
                raise

    async def get(self, thread_id: str) -> ThreadHandle:
        """The live session of ``thread_id`` (an id, a name or a unique id prefix), resuming it
        from its rollout when not open. A name is resolved first: the live session of the thread
        it names is that thread's one writer, so it is never opened a second time."""
        async with self._lock:
            resolved = self._resolve(thread_id)
            handle = self.threads.get(resolved)
            if handle is None:
                handle = await self._open(thread=resolved)
            return handle

    def _resolve(self, thread_id: str) -> str:
        if thread_id in self.threads:
            return thread_id
        with ThreadStore(self.defaults.load_config(self.defaults.server_cwd).home_path) as store:
            resolved = store.resolve(thread_id)
        if resolved is None:
            raise LookupError(f"no thread {thread_id!r}: pass the thread_id an agent call returned")
        return resolved

    # -- lifetime ----------------------------------------------------------------------------

    def claim(self, handle: ThreadHandle, client: str | None) -> None:
        """``client`` (an MCP session id, ``None`` for stdio and stateless HTTP) uses ``handle`` now."""
        handle.client = client
        self._arm_idle(handle)

    def release(self, client: str) -> None:
        """The MCP client ``client`` disconnected: close the sessions it used last."""
        for handle in [h for h in self.threads.values() if h.client == client]:
            if handle.run is not None:
                handle.run.interrupt("the MCP client disconnected")
            self.close(handle)

    def close(self, handle: ThreadHandle) -> asyncio.Task[None]:
        """Close one session now (its owner task shuts the MCP servers down); the thread stays on disk."""
        thread_id = handle.session.snapshot().thread_id
        if self.threads.get(thread_id) is handle:
            del self.threads[thread_id]
            self._closing[thread_id] = handle.owner
        if handle.idle is not None:
            handle.idle.cancel()
        handle.close.set()
        return handle.owner

    def _gone(self, handle: ThreadHandle) -> None:
        thread_id = handle.session.snapshot().thread_id
        if self.threads.get(thread_id) is handle:
            del self.threads[thread_id]
        if self._closing.get(thread_id) is handle.owner:
            del self._closing[thread_id]
        if handle.idle is not None:
            handle.idle.cancel()

    def _arm_idle(self, handle: ThreadHandle) -> None:
        if handle.idle is not None:
            handle.idle.cancel()
        handle.last_used = time.monotonic()
        loop = asyncio.get_running_loop()
        handle.idle = loop.call_later(self.defaults.idle_timeout, self._idle_expired, handle)

    def _idle_expired(self, handle: ThreadHandle) -> None:
        if handle.busy:  # a stateless run waiting for its client is bounded by park_timeout instead
            self._arm_idle(handle)
        else:
            self.close(handle)

    async def _make_room(self) -> None:
        """Keep below ``max_sessions``: close the least recently used idle session, or refuse."""
        cap = self.defaults.max_sessions
        while len(self.threads) >= cap:
            idle = [h for h in self.threads.values() if not h.busy]
            if not idle:
                raise PoolFull(f"all {cap} live sessions are running a turn (the server's --max-sessions is "
                               f"{cap}); try again when one has finished")
            await asyncio.gather(self.close(min(idle, key=lambda h: h.last_used)), return_exceptions=True)

    # -- runs --------------------------------------------------------------------------------

    def start(self, handle: ThreadHandle, prompt: str, model: str | None = None,
              policy: Policy | None = None, *, interactive: bool = False) -> TurnRun:
        """Start a turn; ``interactive`` says whether this caller can be asked (per call: each
        MCP client says what it can do)."""
        if handle.busy:
            raise TurnRunning(f"thread {handle.session.snapshot().thread_id} is running a turn; wait or cancel it first")
        run = TurnRun(handle, prompt, model, policy, interactive, self.defaults.ask_timeout)
        handle.run = run
        handle.last_used = time.monotonic()
        self.runs[run.token] = run
        run.task.add_done_callback(lambda _: self._forget(run))
        return run

    def _forget(self, run: TurnRun) -> None:
        parked, closed = run.parked, run.handle.close.is_set()
        run.unpark()
        if parked and not closed:  # keep the token: the client's next stateless round collects the result
            asyncio.get_running_loop().call_later(self.defaults.park_timeout, self.runs.pop, run.token, None)
        else:
            self.runs.pop(run.token, None)
        if not closed:
            self._arm_idle(run.handle)

    async def aclose(self) -> None:
        handles = list(self.threads.values())
        for handle in handles:
            if handle.run is not None:
                handle.run.interrupt("the MCP server is shutting down")
            self.close(handle)
        await asyncio.gather(*(h.owner for h in handles), *self._closing.values(), return_exceptions=True)
        self.threads.clear()
        self.runs.clear()
