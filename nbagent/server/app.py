"""The MCP server: tools ``agent`` and ``agent-reply`` over nbagent sessions.

Built on the SDK's lowlevel ``Server`` because it lets one handler answer either with a final
``CallToolResult`` or with an ``InputRequiredResult`` carrying arbitrary (forwarded) schemas.

How an inner question reaches the caller depends on the protocol generation:

- 2025-11-25 and older (handshake): the server pushes ``elicitation/create`` on the call's own
  stream while the turn keeps running; the answer goes back as an Op.
- 2026-07-28 (stateless): the server cannot push requests, so the round ends with an
  ``InputRequiredResult`` naming every open question; the turn keeps running in the
  ``SessionPool`` and the client's retry (same tool, same arguments, ``requestState`` = the run
  token, sealed by the SDK) delivers the answers and continues forwarding events.
- A client without the elicitation capability: the session is made non-interactive, so the
  core's policy answers (a call that needs approval is declined and the model is told so).
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import anyio
import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from nbagent._version import __version__
from nbagent.config import ConfigError
from nbagent.core.session import RunResult
from nbagent.secrets import Redactor
from nbagent.server.asks import CANNOT_ASK, Ask, answer_op, elicit_params
from nbagent.server.forward import LEVELS, Forwarder
from nbagent.server.overrides import Overrides
from nbagent.server.threads import Defaults, PoolFull, SessionPool, ThreadHandle, TurnRun, TurnRunning
from nbagent.server.tools import TOOLS, AgentArgs, ReplyArgs
from nbagent.store import ThreadBusy
from nbagent.textsafe import one_line

INSTRUCTIONS = (
    "nbagent runs an agent session per thread. Call `agent` with a prompt to start a thread; it "
    "returns the final text and a thread_id. Call `agent-reply` with that thread_id to continue. "
    "Tool approvals and questions from the agent's MCP servers arrive as elicitations."
)


def _text_result(text: str, *, thread_id: str = "", is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content={"thread_id": thread_id, "text": text},
        is_error=is_error,
    )


def run_result(result: RunResult, redactor: Redactor) -> types.CallToolResult:
    """The turn's outcome as the tool result: the final text plus ``{thread_id, text}``,
    redacted as the rollout holds them (the model may repeat a server's secret)."""
    if result.status == "completed":
        return _text_result(redactor.text(result.text), thread_id=result.thread_id)
    text = redactor.text(result.text or "")
    why = redactor.text(f"The turn {result.status}: {result.error or 'no reason given'}")
    result_text = f"{text}\n\n{why}" if text else why
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result_text)],
        structured_content={"thread_id": result.thread_id, "text": text},
        is_error=True,
    )


def _arguments_error(name: str, exc: ValidationError) -> str:
    """One line naming each bad argument (``agent-reply: argument 'config': Extra inputs ...``)."""
    problems = "; ".join(f"argument '{'.'.join(str(p) for p in e['loc'])}': {e['msg']}" for e in exc.errors())
    return f"{name}: {problems}"


def _connection(ctx: ServerRequestContext[Any]) -> Connection | None:
    """The caller's connection: one per MCP session over stateful HTTP, one per request stateless."""
    connection = getattr(ctx.session, "_connection", None)
    return connection if isinstance(connection, Connection) else None


def _modern(ctx: ServerRequestContext[Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _elicit_caps(ctx: ServerRequestContext[Any]) -> tuple[bool, bool]:
    """``(form, url)``: which elicitation modes the caller declared."""
    caps = ctx.session.client_capabilities
    elicitation = caps.elicitation if caps is not None else None
    if elicitation is None:
        return False, False
    form = elicitation.form is not None or elicitation.url is None  # an empty object means form
    return form, elicitation.url is not None


class AgentServer:
    """Request handlers over one ``SessionPool``; ``build()`` gives the SDK ``Server``."""

    def __init__(self, pool: SessionPool | None = None) -> None:
        self.pool = pool or SessionPool(Defaults())

    def build(self) -> Server[Any]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            server: Server[Any] = Server(
                "nbagent",
                version=__version__,
                title="nbagent",
                instructions=INSTRUCTIONS,
                on_list_tools=self.list_tools,
                on_call_tool=self.call_tool,
                on_set_logging_level=self.set_level,
            )
        server.middleware.append(RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience="nbagent"))
        return server

    # -- handlers --------------------------------------------------------------------------

    async def list_tools(self, ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def set_level(self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams) -> types.EmptyResult:
        connection = _connection(ctx)
        if connection is not None:
            connection.state["nbagent_log_level"] = params.level
        return types.EmptyResult()

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        if params.name not in ("agent", "agent-reply"):
            return _text_result(f"unknown tool {params.name!r}; this server has agent and agent-reply", is_error=True)
        if params.request_state is not None:
            run = self.pool.runs.get(params.request_state)
            if run is None:
                return _text_result("this run has ended or expired; start again with agent-reply", is_error=True)
            self._apply(run, params.input_responses or {})
            return await self._rounds(ctx, run)
        try:
            run = await self._start(ctx, params)
        except ValidationError as exc:
            return _text_result(_arguments_error(params.name, exc), is_error=True)
        except (ConfigError, LookupError, TurnRunning, ThreadBusy, PoolFull, ValueError) as exc:
            return _text_result(f"{params.name}: {exc}", is_error=True)
        if _modern(ctx):
            return await self._rounds(ctx, run)
        return await self._push(ctx, run)

    async def _start(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> TurnRun:
        arguments = params.arguments or {}
        if params.name == "agent":
            args = AgentArgs.model_validate(arguments)
            asked = Overrides(model=args.model, policy=args.policy, cwd=args.cwd, config=args.config)
            handle = await self.pool.open(asked, thread_name=args.thread_name)
        else:
            reply = ReplyArgs.model_validate(arguments)
            handle = await self.pool.get(reply.thread_id)
            args = AgentArgs(prompt=reply.prompt)
        form, _ = _elicit_caps(ctx)
        # The core's policy answers when nobody can be asked (`never` and non-interactive decline).
        interactive = form and (_modern(ctx) or ctx.session.can_send_request)
        run = self.pool.start(handle, args.prompt, interactive=interactive)
        self._claim(ctx, handle)  # only once the call is the thread's: a refused one changes no owner
        return run

    def _claim(self, ctx: ServerRequestContext[Any], handle: ThreadHandle) -> None:
        """Tie the session to the caller's MCP session, so that its disconnect closes it."""
        connection = _connection(ctx)
        client = connection.session_id if connection is not None else None
        self.pool.claim(handle, client)
        if connection is not None and client is not None and not connection.state.get("nbagent_release"):
            connection.state["nbagent_release"] = True
            connection.exit_stack.callback(self.pool.release, client)

    # -- event forwarding ------------------------------------------------------------------

    def _forwarder(self, ctx: ServerRequestContext[Any], run: TurnRun) -> Forwarder:
        connection = _connection(ctx)
        level = connection.state.get("nbagent_log_level", "info") if connection is not None else "info"

        async def progress(value: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(value, total, message)

        async def log(lvl: str, data: Any) -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await ctx.session.send_log_message(lvl, data, logger="nbagent",  # type: ignore[arg-type]  # a level of LEVELS
                                                   related_request_id=ctx.request_id)

        return Forwarder(progress, log, min_level=level if level in LEVELS else "info")

    # -- 2025-11-25: push elicitation while the turn runs -----------------------------------

    async def _push(self, ctx: ServerRequestContext[Any], run: TurnRun) -> types.CallToolResult:
        forward = self._forwarder(ctx, run)
        try:
            async with anyio.create_task_group() as tg:
                while True:
                    item = await run.next(forward)
                    if isinstance(item, RunResult):
                        tg.cancel_scope.cancel()
                        return run_result(item, run.session.snapshot().redactor)
                    tg.start_soon(self._ask_push, ctx, run, item)
        except BaseException:
            run.interrupt("the MCP client cancelled the call")
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _ask_push(self, ctx: ServerRequestContext[Any], run: TurnRun, ask: Ask) -> None:
        """Ask the client. An error for an answer (its form failed, it disconnected) means none
        will come: the ask ends then, unanswered. One it never answers is left to the turn's ask
        bound (``--ask-timeout``), which settles it by timeout."""
        _, url_ok = _elicit_caps(ctx)
        params = elicit_params(ask, url_ok=url_ok)
        if params is None:
            run.answer(ask, answer_op(ask, CANNOT_ASK))
            return
        with anyio.move_on_after(self.pool.defaults.ask_timeout):  # withdrawn when the session stops waiting
            try:
                if isinstance(params, types.ElicitRequestURLParams):
                    result = await ctx.session.elicit_url(params.message, params.url, params.elicitation_id or ask.key,
                                                          related_request_id=ctx.request_id)
                else:
                    result = await ctx.session.elicit_form(params.message, params.requested_schema,
                                                           related_request_id=ctx.request_id)
            except Exception as exc:
                said = one_line(str(exc) or type(exc).__name__)[:300]  # the client's words, on one line
                run.unanswered(ask, f"The MCP client could not be asked: {said}")
                return
            run.answer(ask, answer_op(ask, result))

    # -- 2026-07-28: input-required rounds ---------------------------------------------------

    def _apply(self, run: TurnRun, responses: dict[str, Any]) -> None:
        for key, response in responses.items():
            ask = run.sent.get(key)
            if ask is not None and isinstance(response, types.ElicitResult):
                run.answer(ask, answer_op(ask, response))

    async def _rounds(
        self, ctx: ServerRequestContext[Any], run: TurnRun
    ) -> types.CallToolResult | types.InputRequiredResult:
        run.unpark()
        await asyncio.sleep(0)  # let answered asks leave the session's pending lists
        forward = self._forwarder(ctx, run)
        try:
            while True:
                asks = run.open_asks()
                if not asks:
                    item = await run.next(forward)
                    if isinstance(item, RunResult):
                        return run_result(item, run.session.snapshot().redactor)
                    asks = [item] + [a for a in run.open_asks() if a.wire_key != item.wire_key]
                required = self._input_required(ctx, run, asks)
                if required is not None:
                    run.park(self.pool.defaults.park_timeout)
                    return required
        except BaseException:
            run.interrupt("the MCP client cancelled the call")
            raise

    def _input_required(
        self, ctx: ServerRequestContext[Any], run: TurnRun, asks: list[Ask]
    ) -> types.InputRequiredResult | None:
        _, url_ok = _elicit_caps(ctx)
        requests: dict[str, types.InputRequest] = {}
        for ask in asks:
            params = elicit_params(ask, url_ok=url_ok)
            if params is None:
                run.answer(ask, answer_op(ask, CANNOT_ASK))
                continue
            run.sent[ask.wire_key] = ask
            requests[ask.wire_key] = types.ElicitRequest(params=params)
        if not requests:
            return None
        return types.InputRequiredResult(input_requests=requests, request_state=run.token)


def build_server(defaults: Defaults | None = None) -> tuple[Server[Any], SessionPool]:
    """A ready SDK server and the pool to close (``await pool.aclose()``) when done."""
    pool = SessionPool(defaults or Defaults())
    return AgentServer(pool).build(), pool
