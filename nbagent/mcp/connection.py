"""One MCP server connection, held by one owner task (DESIGN §9).

The SDK's client contexts must be entered and exited in the same task, so each connection
runs an owner task that opens the transport and the ``mcp.Client``, lists the tools and then
waits for a close signal (or the server's death). Calls from other tasks only send requests
through the live session; they never enter or exit a context.

The tool-call deadline is a cancel scope whose deadline is pushed out while an elicitation
for that call waits for a human: waiting for the user does not count as the tool's time.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import os
import time
from collections.abc import Awaitable, Callable
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from nbagent._version import __version__
from nbagent.config import Config, McpServerConfig
from nbagent.deliver import deliver
from nbagent.mcp.env import missing_env_vars, server_env
from nbagent.mcp.stdio import ChildProcess, stdio_transport
from nbagent.mcp.validation import OutputCheck
from nbagent.mcp.listing import ToolHints, first_of_each
from nbagent.mcp.wire import WireTap, server_secrets
from nbagent.protocol import (
    ElicitationRequested,
    EventMsg,
    McpLog,
    McpLoginCompleted,
    McpLoginRequired,
    McpStartupUpdate,
    WarningEvent,
    new_id,
)
from nbagent.protocol.elicitation import ElicitOutcome
from nbagent.protocol.tools import ProgressFn
from nbagent.store.rollout import Redactor

log = logging.getLogger(__name__)

EventFn = Callable[[EventMsg], None]
ElicitFn = Callable[[ElicitationRequested], Awaitable[ElicitOutcome]]
State = Literal["starting", "ready", "failed", "stopped"]

MAX_TOOL_PAGES = 100
"""A server whose ``tools/list`` cursor never ends cannot hang startup."""
CLOSE_TIMEOUT_SEC = 5.0
STDERR_TAIL_LINES = 20
STDERR_TAIL_BYTES = 4000
LOG_LEVEL: types.LoggingLevel = "info"
"""What 2026-07-28 servers are asked to send (logging there is opt-in per request)."""
_NO_BACKCHANNEL = "no back-channel"


def innermost(exc: BaseException) -> BaseException:
    """The one exception a task group wrapped (the SDK's transports nest them), else ``exc``."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def describe_error(exc: BaseException) -> str:
    """``ConnectError: refused``: the exception that failed, named, for a one-line message."""
    exc = innermost(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class McpStartupError(RuntimeError):
    """A server did not become ready; carries the tail of its stderr log."""

    def __init__(self, message: str, stderr_tail: str | None = None) -> None:
        super().__init__(message)
        self.stderr_tail = stderr_tail


class McpUnavailable(RuntimeError):
    """The server is not connected (failed, crashed, stopped)."""


@dataclass(eq=False)
class CallControl:
    """One in-flight call's deadline, pausable while an elicitation waits for the user."""

    call_id: str | None
    scope: anyio.CancelScope
    remaining: float | None = None
    paused: int = 0
    waited: float = 0.0
    _paused_at: float = 0.0

    def pause(self) -> None:
        if self.paused == 0:
            self._paused_at = time.monotonic()
            if math.isfinite(self.scope.deadline):
                self.remaining = max(0.0, self.scope.deadline - anyio.current_time())
                self.scope.deadline = math.inf
        self.paused += 1

    def resume(self) -> None:
        self.paused -= 1
        if self.paused == 0:
            self.waited += time.monotonic() - self._paused_at
            if self.remaining is not None:
                self.scope.deadline = anyio.current_time() + self.remaining
                self.remaining = None


_current_call: contextvars.ContextVar[tuple[McpConnection, CallControl] | None] = contextvars.ContextVar(
    "nbagent_mcp_current_call", default=None
)


def _client_mode(protocol: str) -> str:
    """A pinned modern version still probes ``server/discover`` (for instructions and
    capabilities); the connection then refuses a server that answered with the legacy handshake."""
    return "legacy" if protocol == "legacy" else "auto"


@dataclass
class _Stderr:
    path: Path
    offset: int = 0
    file: IO[str] | None = None

    def open(self) -> IO[str]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(self.path, "a", encoding="utf-8", errors="replace")  # noqa: SIM115 - lives with the process
        self.file.write(f"--- nbagent: server start {time.strftime('%Y-%m-%d %H:%M:%S')} ---\n")
        self.file.flush()
        self.offset = self.file.tell()
        return self.file

    def close(self) -> None:
        if self.file is not None:
            with suppress(OSError):
                self.file.close()
            self.file = None

    def tail(self) -> str | None:
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                data = fh.read()
        except OSError:
            return None
        text = data[-STDERR_TAIL_BYTES:].decode("utf-8", errors="replace")
        lines = text.splitlines()[-STDERR_TAIL_LINES:]
        return "\n".join(lines) or None


@dataclass
class ConnectionInfo:
    """What a started connection learnt from its server."""

    tools: list[types.Tool] = field(default_factory=list)
    instructions: str | None = None
    protocol_version: str | None = None
    server_name: str | None = None
    server_version: str | None = None


class McpConnection:
    """One server: start, list tools (to the end), call, follow changes, close without leftovers."""

    def __init__(
        self,
        name: str,
        cfg: McpServerConfig,
        *,
        log_dir: Path,
        on_event: EventFn,
        on_elicit: ElicitFn,
        on_tools_changed: Callable[[McpConnection], None] | None = None,
        force_legacy: bool = False,
        config: Config | None = None,
        sign_in: bool = True,
    ) -> None:
        self.name = name
        self.cfg = cfg
        self.oauth_config = config
        """The session's config, for where OAuth tokens live; ``None``: no OAuth logins."""
        self.sign_in = sign_in
        """Whether a login may ask the person (``False``: stored tokens only, else it fails)."""
        self.state: State = "stopped"
        self.error: str | None = None
        self.info = ConnectionInfo()
        self.force_legacy = force_legacy
        """Set after a call showed the server needs the legacy protocol (push elicitation)."""
        self._on_event = on_event
        self._on_elicit = on_elicit
        self._on_tools_changed = on_tools_changed
        self._stderr = _Stderr(log_dir / f"{name}.log")
        self._client: Client | None = None
        self._child: list[ChildProcess] = []
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._close = anyio.Event()
        self._changed = anyio.Event()
        self._listed = anyio.Event()
        """Unset from an announced change until its re-list ends: calls wait for it."""
        self._listed.set()
        self._check_output = OutputCheck()
        """Results checked against the listed output schemas, in place of the SDK's check."""
        self._relist_error: str | None = None
        self._closing = False
        self._serving = False
        self._inflight: set[CallControl] = set()
        self._startup: CallControl | None = None
        self.wire = WireTap()
        """This server's last JSON-RPC messages, for ``inspect wire`` (one append per message)."""
        self.generation = 0
        """Bumped whenever the tool list or the state changes, so catalogues know to rebuild."""

    # ----- facts -------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._child[0].pid if self._child else None

    @property
    def mode(self) -> str:
        return "legacy" if self.force_legacy else _client_mode(self.cfg.protocol)

    @property
    def log_path(self) -> Path:
        return self._stderr.path

    def stderr_tail(self) -> str | None:
        """The end of the server's stderr since it started, as every display shows it: with this
        server's secrets redacted, since a server that fails often prints the token it was given."""
        tail = self._stderr.tail() if self.cfg.transport == "stdio" else None
        return self._redacted(tail) if tail else tail

    def _redacted(self, text: str) -> str:
        return Redactor(server_secrets(self.name, self.cfg, self.oauth_config, every_env_value=False)).text(text)

    def _emit(self, event: EventMsg) -> None:
        deliver(self._on_event, event, log)  # a broken subscriber must not break the connection

    def _warn(self, message: str) -> None:
        self._emit(WarningEvent(message=message))

    # ----- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Connect, bounded by ``startup_timeout_sec``; raise :class:`McpStartupError` on failure."""
        if self._task is not None:
            raise RuntimeError(f"MCP server {self.name!r} was already started")
        self.state = "starting"
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._ready.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._task = loop.create_task(self._own(), name=f"nbagent-mcp-{self.name}")
        timeout = self.cfg.startup_timeout_sec
        # A deadline that a login pauses: the person's time in their browser is not the server's.
        self._startup = CallControl(call_id=None, scope=anyio.CancelScope(deadline=anyio.current_time() + timeout))
        try:
            with self._startup.scope:
                await asyncio.shield(self._ready)
            if self._startup.scope.cancelled_caught:
                raise TimeoutError
        except TimeoutError:
            await self.aclose(state="failed")
            self.error = f"MCP server {self.name!r} did not start within {timeout:g} s"
            raise McpStartupError(self.error, self.stderr_tail()) from None
        except McpStartupError as exc:
            await self.aclose(state="failed")
            self.error = str(exc)
            raise
        except BaseException:
            await self.aclose(state="failed")
            raise
        finally:
            self._startup = None
        self.state = "ready"
        self.generation += 1

    async def aclose(self, state: State = "stopped") -> None:
        """Signal the owner task, wait (bounded), cancel it if needed, then kill what is left."""
        self._closing = True
        self._close.set()
        task = self._task
        if not self._serving:
            for child in self._child:
                child.hurry = True
        if task is not None and not task.done():
            # Only a serving owner waits for the close signal; one still connecting is cancelled.
            done, _ = await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_SEC if self._serving else 0)
            if not done:
                task.cancel()
                await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_SEC)
        for child in self._child:
            child.sweep()
        self._stderr.close()
        if self.state != "failed" or state == "failed":
            self.state = state
        self.generation += 1

    def _fail_ready(self, exc: BaseException) -> None:
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(exc)

    async def _own(self) -> None:
        """The owner task: every SDK context is entered and exited here."""
        try:
            async with AsyncExitStack() as stack:
                # The tap records what arrived; the SDK reads it with hints that are not booleans dropped.
                transport = ToolHints(self.name, self._warn).wrap(self.wire.tap(self._transport(stack)))
                client = Client(
                    transport,
                    mode=self.mode,
                    client_info=types.Implementation(name="nbagent", version=__version__),
                    elicitation_callback=self._elicit,
                    sampling_callback=self._sampling,
                    logging_callback=self._log,
                    message_handler=self._message,
                    log_level=LOG_LEVEL,
                    cache=None,
                )
                await stack.enter_async_context(client)
                # The SDK's own check imports jsonschema and every format checker (seconds).
                client.session.validate_tool_result = self._check_output  # type: ignore[method-assign]
                if self.cfg.protocol not in ("auto", "legacy") and client.protocol_version != self.cfg.protocol:
                    raise McpStartupError(
                        f"MCP server {self.name!r} speaks protocol {client.protocol_version}, "
                        f"but protocol = {self.cfg.protocol!r} is configured"
                    )
                self._client = client
                self.info = ConnectionInfo(
                    tools=await self._list_tools(client),
                    instructions=client.instructions,
                    protocol_version=client.protocol_version,
                    server_name=client.server_info.name if client.server_info else None,
                    server_version=client.server_info.version if client.server_info else None,
                )
                if self._ready is not None and not self._ready.done():
                    self._ready.set_result(None)
                async with anyio.create_task_group() as tg:
                    self._serving = True
                    tg.start_soon(self._follow_changes, client)
                    if self._child:
                        tg.start_soon(self._watch_exit, self._child[0])
                    if self._listens(client):
                        tg.start_soon(self._listen, client)
                    await self._close.wait()
                    tg.cancel_scope.cancel()
        except BaseException as exc:  # noqa: BLE001 - reported, never raised out of the owner
            if isinstance(exc, asyncio.CancelledError) and self._closing:
                self._fail_ready(McpStartupError(f"MCP server {self.name!r}: startup cancelled"))
            else:
                self._fail_ready(McpStartupError(self._why_ended(exc), self.stderr_tail()))
                if self.state == "ready" and not self._closing:
                    self._crashed(self._why_ended(exc))
            if not isinstance(exc, Exception):
                raise
        finally:
            self._client = None
            for child in self._child:
                child.sweep()

    def _why_ended(self, exc: BaseException) -> str:
        """Why the owner task ended (startup failed or the server died), in one line naming the
        server; an error the server or its transport wrote may quote a secret, so it is redacted."""
        return self._redacted(self._why_ended_raw(innermost(exc)))

    def _why_ended_raw(self, exc: BaseException) -> str:
        if isinstance(exc, McpStartupError):
            return str(exc)
        if isinstance(exc, FileNotFoundError):
            return f"MCP server {self.name!r}: command not found: {self.cfg.as_written(self.cfg.command)!r}"
        if isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
            code = self._child[0].returncode if self._child else None
            how = f" (exit code {code})" if code is not None else ""
            return f"MCP server {self.name!r} closed the connection during startup{how}"
        return f"MCP server {self.name!r} failed to start: {describe_error(exc)}"

    def _crashed(self, message: str) -> None:
        self.state = "failed"
        self.generation += 1
        self.error = message
        self._listed.set()  # nothing more will be listed: waiting calls learn the state at once
        self._emit(McpStartupUpdate(server=self.name, status="failed", error=message, stderr_tail=self.stderr_tail()))

    async def _watch_exit(self, child: ChildProcess) -> None:
        await child.exited.wait()
        if self._closing:
            return
        with anyio.move_on_after(1.0):
            while child.returncode is None:
                await anyio.sleep(0.01)
        code = child.returncode
        self._crashed(f"MCP server {self.name!r} exited unexpectedly (exit code {code})")
        self._close.set()

    # ----- transports --------------------------------------------------------------------

    def _transport(self, stack: AsyncExitStack) -> AbstractAsyncContextManager[Any]:
        cfg = self.cfg
        if cfg.transport == "stdio":
            assert cfg.command is not None
            missing = missing_env_vars(cfg)
            if missing:
                self._emit(WarningEvent(message=f"MCP server {self.name!r}: env_vars not set: {', '.join(missing)}"))
            cwd = str(Path(cfg.cwd).expanduser()) if cfg.cwd else None
            errlog = self._stderr.open()
            return stdio_transport(
                cfg.command, list(cfg.args), env=server_env(cfg), cwd=cwd, errlog=errlog, child=self._child,
                launcher=cfg.env_clear_parent,
            )
        headers = self._http_headers()
        assert cfg.url is not None
        auth = self._oauth(stack)
        if cfg.transport == "sse":
            from mcp.client.sse import sse_client

            # the SDK's own HTTP+SSE client (``type = "sse"``), with the same limits as streamable HTTP's
            return sse_client(cfg.url, headers=headers, timeout=30.0, sse_read_timeout=300.0, auth=auth)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0), auth=auth)
        stack.push_async_callback(http.aclose)
        return streamable_http_client(cfg.url, http_client=http)

    def _oauth(self, stack: AsyncExitStack) -> Any:
        """The SDK's OAuth provider for a server without an Authorization of its own: a 401, at
        startup or mid-session, becomes a login whose link is an event, not a failure."""
        from nbagent.mcp import oauth

        if self.oauth_config is None or not oauth.uses_oauth(self.cfg):
            return None

        async def on_link(url: str) -> None:
            self._emit(McpLoginRequired(server=self.name, url=url))

        auth = oauth.ServerAuth(
            self.name, self.cfg, self.oauth_config, on_link=on_link if self.sign_in else None,
            on_completed=lambda: self._emit(McpLoginCompleted(server=self.name)), waiting=self._waiting_on_person,
        )  # fmt: skip
        stack.push_async_callback(auth.aclose)
        return auth.provider

    @contextmanager
    def _waiting_on_person(self) -> Iterator[None]:
        """Pause the startup deadline and every in-flight call's while a person signs in."""
        controls = [*self._inflight, *([self._startup] if self._startup else [])]
        for control in controls:
            control.pause()
        try:
            yield
        finally:
            for control in controls:
                control.resume()

    def _http_headers(self) -> dict[str, str]:
        """Static headers, headers from environment variables, and the bearer token (never logged)."""
        cfg = self.cfg
        headers = dict(cfg.http_headers)
        for header, var in cfg.env_http_headers.items():
            value = os.environ.get(var)
            if value is None:
                self._emit(WarningEvent(message=f"MCP server {self.name!r}: header {header} needs ${var}, not set"))
            else:
                headers[header] = value
        if cfg.bearer_token_env_var:
            token = os.environ.get(cfg.bearer_token_env_var)
            if not token:
                raise McpStartupError(
                    f"MCP server {self.name!r}: bearer_token_env_var {cfg.bearer_token_env_var} is not set"
                )
            headers["Authorization"] = f"Bearer {token}"
        return headers

    # ----- tools catalogue ---------------------------------------------------------------

    async def _list_tools(self, client: Client) -> list[types.Tool]:
        tools = await self._paginate("tools/list", lambda cursor: client.list_tools(cursor=cursor), "tools")
        tools = first_of_each(self.name, tools, self._warn)
        self._check_output.listed(tools)
        return tools

    async def _paginate(self, method: str, fetch: Callable[[str | None], Awaitable[Any]], field: str) -> list[Any]:
        """Every page of a ``*/list`` method, bounded: a server whose cursor never ends or repeats
        yields what it sent so far, with a warning."""
        items: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_TOOL_PAGES):
            page = await fetch(cursor)
            items.extend(getattr(page, field))
            cursor = page.next_cursor
            if not cursor:
                return items
            if cursor in seen:
                break
            seen.add(cursor)
        self._emit(WarningEvent(message=f"MCP server {self.name!r}: {method} did not end; kept {len(items)} {field}"))
        return items

    def _listens(self, client: Client) -> bool:
        """2026-07-28 servers announce tool changes on a ``subscriptions/listen`` stream."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        caps = client.server_capabilities
        return bool(
            client.protocol_version in MODERN_PROTOCOL_VERSIONS and caps.tools is not None and caps.tools.list_changed
        )

    async def _listen(self, client: Client) -> None:
        try:
            async with client.listen(tools_list_changed=True) as sub:
                async for _event in sub:
                    self._announce_change()
        except Exception as exc:  # noqa: BLE001 - the catalogue then only refreshes on restart
            if not self._closing:
                log.debug("MCP server %s: listen ended: %s", self.name, exc)

    def _announce_change(self) -> None:
        """The server's tools may differ from ``info.tools`` until the re-list this starts ends."""
        if self._listed.is_set():
            self._listed = anyio.Event()
        self._changed.set()

    async def _follow_changes(self, client: Client) -> None:
        """Re-list after ``tools/list_changed``; run here, never inside the notification handler."""
        while True:
            await self._changed.wait()
            self._changed = anyio.Event()
            try:
                with anyio.fail_after(self.cfg.startup_timeout_sec):
                    tools = await self._list_tools(client)
            except Exception as exc:  # noqa: BLE001
                self._relist_error = str(exc) or type(exc).__name__
                self._emit(WarningEvent(message=f"MCP server {self.name!r}: re-listing tools failed: {exc}"))
            else:
                self._relist_error = None
                self.info.tools = tools
                self.generation += 1
                if self._on_tools_changed is not None:
                    self._on_tools_changed(self)
            if not self._changed.is_set():
                self._listed.set()

    async def current_tools(self, *, relist: bool = False) -> list[types.Tool]:
        """The tools as a call made now would find them: waits for an announced change to be
        listed (bounded by ``startup_timeout_sec``); ``relist`` lists again first. Raises
        :class:`McpUnavailable` when the current tools cannot be known."""
        self._live()
        if relist or self._relist_error is not None:
            self._announce_change()  # a failed re-list is retried rather than trusted
        elif self._listed.is_set():
            return self.info.tools  # nothing announced: no wait to bound (every call passes here)
        limit = self.cfg.startup_timeout_sec
        with anyio.move_on_after(limit):
            while not self._listed.is_set():
                await self._listed.wait()
        self._live()
        if not self._listed.is_set():
            raise McpUnavailable(f"MCP server {self.name!r} did not list its tools again within {limit:g} s")
        if self._relist_error is not None:
            raise McpUnavailable(f"MCP server {self.name!r}: listing its tools again failed: {self._relist_error}")
        return self.info.tools

    # ----- SDK callbacks -----------------------------------------------------------------

    async def _message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._announce_change()

    async def _log(self, params: types.LoggingMessageNotificationParams) -> None:
        self._emit(McpLog(server=self.name, level=str(params.level), logger=params.logger, data=params.data))

    async def _sampling(self, context: Any, params: Any) -> types.ErrorData:
        if self.cfg.sampling:
            message = (
                f"MCP server {self.name!r} asked to sample the model; sampling = true is set, "
                "but nbagent does not support sampling yet, so the request was declined"
            )
        else:
            message = f"MCP server {self.name!r} asked to sample the model; declined (sampling is not enabled)"
        self._emit(WarningEvent(message=message))
        return types.ErrorData(code=types.INVALID_REQUEST, message="sampling is not supported by this client")

    def _targets(self) -> tuple[list[CallControl], str | None]:
        """Which in-flight calls an elicitation belongs to, and their call id when knowable."""
        current = _current_call.get()
        if current is not None and current[0] is self:
            return [current[1]], current[1].call_id
        inflight = list(self._inflight)
        return inflight, inflight[0].call_id if len(inflight) == 1 else None

    async def _elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        targets, call_id = self._targets()
        if isinstance(params, types.ElicitRequestURLParams):
            event = ElicitationRequested(
                request_id=new_id("elicit"), server=self.name, mode="url", message=params.message,
                url=params.url, call_id=call_id,
            )  # fmt: skip
        else:
            event = ElicitationRequested(
                request_id=new_id("elicit"), server=self.name, mode="form", message=params.message,
                requested_schema=dict(params.requested_schema), call_id=call_id,
            )  # fmt: skip
        for control in targets:
            control.pause()
        try:
            outcome = await self._on_elicit(event)
        except Exception as exc:  # noqa: BLE001 - a broken front end cancels, never hangs the call
            self._emit(WarningEvent(message=f"MCP server {self.name!r}: elicitation handler failed ({exc}); cancelled"))
            outcome = ElicitOutcome(action="cancel")
        finally:
            for control in targets:
                control.resume()
        # URL mode carries no content: the user acted in their browser, not in a form.
        content = outcome.content if outcome.action == "accept" and event.mode == "form" else None
        return types.ElicitResult(action=outcome.action, content=content)

    # ----- requests ----------------------------------------------------------------------

    def _live(self) -> Client:
        client = self._client
        if client is None or self.state != "ready":
            reason = f": {self.error}" if self.error else ""
            raise McpUnavailable(f"MCP server {self.name!r} is not connected ({self.state}){reason}")
        return client

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        meta: dict[str, Any] | None = None,
        call_id: str | None = None,
        timeout: float | None = None,
        on_progress: ProgressFn | None = None,
    ) -> tuple[types.CallToolResult, CallControl]:
        """One ``tools/call``; raises ``TimeoutError`` when the (elicitation-paused) deadline passes."""
        client = self._live()
        limit = self.cfg.tool_timeout_sec if timeout is None else timeout
        control = CallControl(call_id=call_id, scope=anyio.CancelScope(deadline=anyio.current_time() + limit))

        async def progress(value: float, total: float | None, message: str | None) -> None:
            if on_progress is not None:
                await on_progress(value, total, message)

        self._inflight.add(control)
        token = _current_call.set((self, control))
        try:
            with control.scope:
                result = await client.call_tool(tool, arguments, progress_callback=progress, meta=meta)  # type: ignore[arg-type]
                return result, control
        finally:
            _current_call.reset(token)
            self._inflight.discard(control)
        raise TimeoutError(limit)

    def needs_legacy(self, exc: BaseException) -> bool:
        """Whether a failure shows a push-style server on a 2026-07-28 connection opened by ``auto``."""
        return (
            isinstance(exc, MCPError)
            and _NO_BACKCHANNEL in str(exc)
            and self.cfg.protocol == "auto"
            and not self.force_legacy
        )

    async def list_resources(self) -> list[types.Resource]:
        client = self._live()
        return await self._paginate("resources/list", lambda cursor: client.list_resources(cursor=cursor), "resources")

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        return await self._live().read_resource(uri)

    async def list_prompts(self) -> list[types.Prompt]:
        client = self._live()
        return await self._paginate("prompts/list", lambda cursor: client.list_prompts(cursor=cursor), "prompts")

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> types.GetPromptResult:
        return await self._live().get_prompt(name, arguments)
