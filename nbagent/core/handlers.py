"""One handler per op: what ``Session.submit`` schedules and ``Session.perform`` awaits.

Answers and interrupts act at once, in ``submit`` (a front end's click must not wait behind a
running op), and so do the ops that only read (``Inspect``, ``ListThreads``); every other op is
a coroutine. Each ends with the event it answers with, emitted on the bus like any other. A
handler sees the session's parts, never a front end.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol

from nbagent.config import Config, ConfigError, McpServerConfig
from nbagent.core import checkpoints
from nbagent.core.approval import ApprovalDesk
from nbagent.core.context import compact, text_tokens, tools_tokens
from nbagent.core.elicitation import ElicitationDesk
from nbagent.core.inspect import Inspector, tool_views
from nbagent.core.request_tools import RequestTools
from nbagent.core.router import ToolRouter
from nbagent.core.servers import McpServers
from nbagent.core.thread import ThreadState
from nbagent.core.tool_call import AbortTurn, execute_call
from nbagent.core.turn_context import TurnContext
from nbagent.models.base import ModelClient
from nbagent.protocol import (
    TERMINAL_TYPES,
    AddMcpServer,
    ApprovalDecision,
    ApprovalResolved,
    AskUnanswered,
    CallTool,
    Compact,
    ElicitationResolved,
    ElicitationResponse,
    Entry,
    Event,
    EventMsg,
    FunctionCall,
    FunctionCallOutput,
    Inspect,
    InspectResult,
    Interrupt,
    ListMcpTools,
    ListThreads,
    McpListToolsResponse,
    McpOffers,
    McpStartupUpdate,
    NewThread,
    Op,
    OverrideTurnContext,
    Policy,
    ReadMcpOffers,
    RemoveMcpServer,
    RenameThread,
    RestartMcpServer,
    ResumeThread,
    SessionConfigured,
    Shutdown,
    ThreadList,
    ThreadRenamed,
    ToolCallEnd,
    ToolSpec,
    TurnRecord,
    Undo,
    UserTurn,
    WarningEvent,
    new_id,
)


class Session(Protocol):
    """The parts of a session the handlers use (``nbagent.core.session.Session`` has them)."""

    _approvals: ApprovalDesk
    _elicitations: ElicitationDesk
    _config: Config
    _interactive: bool
    _inspector: Inspector
    _request_tools: RequestTools
    _router: ToolRouter
    _servers: McpServers
    _thread: ThreadState

    @property
    def _running(self) -> bool: ...
    def _tools(self, *, complete: bool = False) -> list[ToolSpec]: ...
    def _turn(self, turn_id: str, model: ModelClient | None, model_name: str, policy: Policy, entry: Entry,
              interactive: bool | None, ask_timeout: float | None = None) -> TurnContext: ...
    def _emit(self, msg: EventMsg) -> EventMsg: ...
    def _configured(self, resumed: int) -> SessionConfigured: ...
    async def _switching(self, switch: Awaitable[str]) -> SessionConfigured: ...
    def model_client(self, model: str | None = None) -> ModelClient: ...


class OpRejected(ValueError):
    """An answer the session turned down (its ask no longer waits, or the answer does not fit);
    the ask, if any, goes on waiting. The same reason is a ``warning`` event."""


class OpFailed(RuntimeError):
    """An op that could not be done; the message names the op."""


# -- answers and interrupts: at once --------------------------------------------------------


def ask_key(op: ApprovalDecision | ElicitationResponse | AskUnanswered) -> str:
    """The id of the ask an answer is for."""
    return op.call_id if isinstance(op, ApprovalDecision) else op.request_id if isinstance(op, ElicitationResponse) else op.id


def answer_now(session: Session, op: ApprovalDecision | ElicitationResponse | AskUnanswered) -> None:
    """Hand an answer to the ask it is for; raises ``OpRejected`` saying why it was not taken."""
    if isinstance(op, ApprovalDecision):
        why = session._approvals.answer(op)
    elif isinstance(op, ElicitationResponse):
        why = session._elicitations.answer(op)
    else:
        desk = session._approvals if op.id in session._approvals.requests() else session._elicitations
        why = desk.unanswered(op.id, op.reason)
    if why is not None:
        raise OpRejected(why)


def ending_event(op: Op) -> Callable[[Event], bool] | None:
    """For an op the session acts on itself (a turn, an answer, an interrupt, shutdown): which
    event ends it. ``None`` for an op with a handler of its own."""
    if isinstance(op, UserTurn):
        return lambda e: e.turn_id == op.turn_id and e.msg.type in TERMINAL_TYPES
    if isinstance(op, ApprovalDecision | ElicitationResponse | AskUnanswered):
        key = ask_key(op)
        return lambda e: isinstance(e.msg, ApprovalResolved | ElicitationResolved) and key in (
            getattr(e.msg, "call_id", None), getattr(e.msg, "request_id", None))
    if isinstance(op, Interrupt):
        return lambda e: e.msg.type == "turn_aborted" and (op.turn_id is None or e.turn_id == op.turn_id)
    if isinstance(op, Shutdown):
        return lambda e: e.msg.type == "shutdown_complete"
    return None


# -- everything else: one coroutine each -----------------------------------------------------


async def override_turn_context(session: Session, op: OverrideTurnContext) -> EventMsg:
    try:
        session._config.requirements.check_turn(policy=op.policy, model=op.model)
    except ConfigError as exc:
        raise OpFailed(str(exc)) from None
    if op.model is not None:
        session._config.model = op.model
    if op.policy is not None:
        session._config.approval_policy = op.policy
    if op.interactive is not None:
        session._interactive = op.interactive
    return session._configured(0)


async def compact_now(session: Session, op: Compact) -> EventMsg:
    """Summarise the thread for the model now (``%agent compact``, ``nbagent compact``)."""
    if session._running:
        raise OpFailed("a turn is running: compact after it ends (or interrupt it)")
    name = op.model or session._config.require_model()
    client = session.model_client(name)
    turn = session._turn(new_id("turn"), client, name, session._config.approval_policy, "python", False)
    thread = session._thread
    _, carried = session._request_tools.select(session._router.catalogue(), thread.items)
    extra = text_tokens(turn.instructions()) + tools_tokens(session._router.for_model(carried))
    done = await compact(thread.items, thread.context, turn.state.budget, model=client, model_name=name,
                         extra=extra, turn_id=None, reason="asked")
    if done is None:
        return session._emit(WarningEvent(message=f"thread {thread.name or thread.id} has nothing to compact yet"))
    thread.record(done.item)
    return session._emit(done.event("asked"))


async def list_mcp_tools(session: Session, op: ListMcpTools) -> EventMsg:
    await session._servers.ready()
    return session._emit(McpListToolsResponse(tools=session._tools(complete=op.complete), servers=session._servers.status()))


async def new_thread(session: Session, op: NewThread) -> EventMsg:
    return await session._switching(session._thread.new(op.name))


async def resume_thread(session: Session, op: ResumeThread) -> EventMsg:
    return await session._switching(session._thread.resume(op.thread))


async def rename_thread(session: Session, op: RenameThread) -> EventMsg:
    session._thread.rename(op.name)
    return session._emit(ThreadRenamed(name=op.name))


def list_threads(session: Session, op: ListThreads) -> EventMsg:
    return session._emit(ThreadList(threads=session._thread.saved(limit=op.limit)))


async def add_mcp_server(session: Session, op: AddMcpServer) -> EventMsg:
    cfg = op.config if isinstance(op.config, McpServerConfig) else McpServerConfig.model_validate(op.config)
    await session._servers.add(op.name, cfg)
    return _startup(session, op.name)


async def restart_mcp_server(session: Session, op: RestartMcpServer) -> EventMsg:
    _known(session, op.name)
    await session._servers.restart(op.name)
    return _startup(session, op.name)


async def remove_mcp_server(session: Session, op: RemoveMcpServer) -> EventMsg:
    _known(session, op.name)
    await session._servers.remove(op.name)
    return McpStartupUpdate(server=op.name, status="stopped")


def _known(session: Session, name: str) -> None:
    if name not in session._servers.names():
        raise OpFailed(f"no MCP server named {name!r} (configured: {', '.join(session._servers.names()) or 'none'})")


def _startup(session: Session, name: str) -> McpStartupUpdate:
    """How a server's start ended, as its last ``mcp_startup_update`` said."""
    st = session._servers.status()[name]
    status: Literal["ready", "stopped", "failed"] = (
        "ready" if st.state == "ready" else "stopped" if st.state in ("stopped", "disabled") else "failed"
    )
    return McpStartupUpdate(server=name, status=status, error=st.error, stderr_tail=st.stderr_tail, tools=st.tools,
                            protocol_version=st.protocol_version)


async def read_mcp_offers(session: Session, op: ReadMcpOffers) -> EventMsg:
    read = session._servers.resources if op.kind == "resources" else session._servers.prompts
    return session._emit(McpOffers(kind=op.kind, text=await read(op.args)))


def inspect(session: Session, op: Inspect) -> EventMsg:
    data: Any
    inspector, thread_id = session._inspector, session._thread.id
    if op.view == "tools":
        data = tool_views(session._tools(complete=True), session._config.approval_policy, session._approvals.memory)
    elif op.view == "request":
        data = inspector.turn_requests(thread_id) if op.all else inspector.last_request(thread_id)
    elif op.view == "turn":
        data = inspector.turn(thread_id, op.turn_id)
    else:
        _known(session, op.server or "")
        data = session._servers.wire(op.server or "", op.last)
    return session._emit(InspectResult(view=op.view, data=data))


async def call_tool(session: Session, op: CallTool) -> EventMsg:
    """Run one catalogue tool for a caller outside the model; an "abort" at its approval denies
    this call only. Ends with the call's ``tool_call_end`` (built here when the call was refused
    before it ran), which holds all an MCP client's answer needs."""
    try:
        session._config.requirements.check_turn(policy=op.policy)
    except ConfigError as exc:
        raise OpFailed(str(exc)) from None
    turn = session._turn(new_id("call_turn"), None, "", op.policy or session._config.approval_policy, op.entry,
                         op.interactive)
    turn.state.catalogue = session._router.catalogue()
    call = FunctionCall(turn_id=turn.turn_id, call_id=new_id("call"), name=op.name, arguments=json.dumps(op.arguments))
    session._thread.write(TurnRecord(turn_id=turn.turn_id, status="started", entry=op.entry, policy=turn.policy))
    try:
        output = await execute_call(turn, call, dict(op.arguments))
    except AbortTurn as exc:
        output = FunctionCallOutput(
            turn_id=turn.turn_id, call_id=call.call_id, output=str(exc), is_error=True, status="denied"
        )
    await checkpoints.settle(turn)  # an outside agent's change is undone like a turn's
    session._thread.write(TurnRecord(turn_id=turn.turn_id, status="completed", entry=op.entry, policy=turn.policy))
    return ToolCallEnd(call_id=output.call_id, tool=op.name, output=output.output, is_error=output.is_error,
                       status=output.status, duration_ms=output.duration_ms or 0.0, content=output.content,
                       structured=output.structured)


Handler = Callable[[Any, Any], Awaitable[EventMsg] | EventMsg]
"""A coroutine, or a plain function for an op that only reads (its answer is emitted before
``submit`` returns, so a front end's synchronous command can show it)."""


async def undo(session: Session, op: Undo) -> EventMsg:
    if session._running:
        raise OpFailed("a turn is running: undo after it ends (or interrupt it)")
    return session._emit(await checkpoints.undo(session._thread, op))


HANDLERS: dict[type[Any], Handler] = {
    OverrideTurnContext: override_turn_context,
    Compact: compact_now,
    ListMcpTools: list_mcp_tools,
    NewThread: new_thread,
    ResumeThread: resume_thread,
    RenameThread: rename_thread,
    ListThreads: list_threads,
    AddMcpServer: add_mcp_server,
    RemoveMcpServer: remove_mcp_server,
    RestartMcpServer: restart_mcp_server,
    ReadMcpOffers: read_mcp_offers,
    Inspect: inspect,
    CallTool: call_tool,
    Undo: undo,
}
"""The coroutine ops; ``UserTurn``, answers, ``Interrupt`` and ``Shutdown`` the session itself handles."""
