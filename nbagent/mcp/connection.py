"""One MCP server connection, held by one owner task (DESIGN §9).

The SDK's client contexts must be entered and exited in the same task, so each connection
runs an owner task that opens the transport (``transport.py``) and the ``mcp.Client``, lists
the tools (``listing.py``) and then waits for a close signal (or the server's death). Calls
from other tasks only send requests through the live session; they never enter or exit a
context. What the server asks unasked is ``server_requests.py``; a call's deadline that a
person's time does not count against is ``deadline.py``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager, AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from nbagent._version import __version__
from nbagent.config import Config, McpServerConfig
from nbagent.deliver import deliver
from nbagent.mcp.deadline import CallControl, current_call, paused
from nbagent.mcp.direct import DirectCalls
from nbagent.mcp.errors import McpStartupError, McpUnavailable, why_ended
from nbagent.mcp.listing import ToolHints, ToolList, paginate
from nbagent.mcp.sandboxed import exited_hint
from nbagent.mcp.server_requests import ElicitFn, EventFn, ServerRequests
from nbagent.mcp.stderr_log import StderrLog
from nbagent.mcp.stdio import ChildProcess
from nbagent.mcp.transport import open_transport
from nbagent.mcp.wire import WireTap, server_secrets
from nbagent.protocol import EventMsg, McpStartupUpdate, WarningEvent
from nbagent.protocol.tools import ProgressFn
from nbagent.secrets import Redactor

log = logging.getLogger(__name__)

State = Literal["starting", "ready", "failed", "stopped"]

CLOSE_TIMEOUT_SEC = 5.0
LOG_LEVEL: types.LoggingLevel = "info"
"""What 2026-07-28 servers are asked to send (logging there is opt-in per request)."""
_NO_BACKCHANNEL = "no back-channel"


def _client_mode(protocol: str) -> str:
    """A pinned modern version still probes ``server/discover`` (for instructions and
    capabilities); the connection then refuses a server that answered with the legacy handshake."""
    return "legacy" if protocol == "legacy" else "auto"


@dataclass
class ConnectionInfo:
    """What a started connection learnt from its server."""

    tools: list[types.Tool] = field(default_factory=list)
    instructions: str | None = None
    protocol_version: str | None = None
    server_name: str | None = None
    server_version: str | None = None
    experimental: dict[str, Any] = field(default_factory=dict)
    """The server's experimental capabilities (``codex/sandbox-state-meta``: it reads the sandbox)."""


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
        self._on_tools_changed = on_tools_changed
        self._stderr = StderrLog(log_dir / f"{name}.log")
        self._client: Client | None = None
        self._direct: DirectCalls | None = None
        """The ``tools/call`` lane of a stdio connection (:mod:`nbagent.mcp.direct`)."""
        self._child: list[ChildProcess] = []
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._close = anyio.Event()
        self._down = anyio.Event()
        """Set once the connection reads as failed or closing: what a call its server cut off waits for."""
        self._tools = ToolList(name, cfg.startup_timeout_sec, self._warn, self._relisted)
        self._closing = False
        self._serving = False
        self._inflight: set[CallControl] = set()
        self._requests = ServerRequests(
            self, name, cfg, on_event=on_event, on_elicit=on_elicit, inflight=self._inflight,
            on_tools_changed=self._tools.announce_change,
        )  # fmt: skip
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
        self._down.set()
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
                lane = self._direct = DirectCalls(self._protocol) if self.cfg.transport == "stdio" else None
                opened = open_transport(
                    self.name, self.cfg, stack, stderr=self._stderr, child=self._child, emit=self._emit,
                    oauth_config=self.oauth_config, sign_in=self.sign_in, waiting=self._waiting_on_person,
                    read_hook=self._read if lane else None,
                )  # fmt: skip
                transport = ToolHints(self.name, self._warn).wrap(self.wire.tap(opened, reads=lane is None))
                if lane is not None:  # over HTTP a request also needs the SDK's headers
                    transport = lane.wrap(transport)
                client = Client(
                    transport,
                    mode=self.mode,
                    client_info=types.Implementation(name="nbagent", version=__version__),
                    elicitation_callback=self._requests.elicit,
                    sampling_callback=self._requests.sampling,
                    logging_callback=self._requests.log,
                    message_handler=self._requests.message,
                    log_level=LOG_LEVEL,
                    cache=None,
                )
                await stack.enter_async_context(client)
                # The SDK's own check imports jsonschema and every format checker (seconds).
                client.session.validate_tool_result = self._tools.check_output  # type: ignore[method-assign]  # ours, not the SDK's
                if self.cfg.protocol not in ("auto", "legacy") and client.protocol_version != self.cfg.protocol:
                    raise McpStartupError(
                        f"MCP server {self.name!r} speaks protocol {client.protocol_version}, "
                        f"but protocol = {self.cfg.protocol!r} is configured"
                    )
                self._client = client
                self.info = ConnectionInfo(
                    tools=await self._tools.list_tools(client),
                    instructions=client.instructions,
                    protocol_version=client.protocol_version,
                    server_name=client.server_info.name if client.server_info else None,
                    server_version=client.server_info.version if client.server_info else None,
                    experimental=dict(getattr(client.server_capabilities, "experimental", None) or {}),
                )
                if self._ready is not None and not self._ready.done():
                    self._ready.set_result(None)
                async with anyio.create_task_group() as tg:
                    self._serving = True
                    tg.start_soon(self._tools.follow_changes, client)
                    if self._child:
                        tg.start_soon(self._watch_exit, self._child[0])
                    if self._tools.listens(client):
                        tg.start_soon(self._tools.listen, client, lambda: self._closing)
                    await self._close.wait()
                    tg.cancel_scope.cancel()
        except BaseException as exc:  # reported, never raised out of the owner
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

    def _protocol(self) -> str | None:
        return self._client.protocol_version if self._client is not None else None

    def _read(self, message: SessionMessage | Exception) -> bool:
        """A stdio server's message as it is read: on the wire record in order, and the direct
        lane's own reply or progress taken there (``True``)."""
        self.wire.note("received", message)
        return self._direct is not None and self._direct.take(message)

    def _why_ended(self, exc: BaseException) -> str:
        """Why the owner task ended; an error the server or its transport wrote may quote a
        secret, so it is redacted. A server that exited in a sandbox is told the keys that give it more."""
        code = self._child[0].returncode if self._child else None
        text = why_ended(self.name, self.cfg, exc, code)
        if code is not None and not self._serving:
            text += exited_hint(self.name, self.cfg, self.oauth_config)
        return self._redacted(text)

    def _crashed(self, message: str) -> None:
        self.state = "failed"
        self.generation += 1
        self.error = message
        self._down.set()
        self._tools.ended()
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

    def _waiting_on_person(self) -> AbstractContextManager[None]:
        """Pause the startup deadline and every in-flight call's while a person signs in."""
        return paused([*self._inflight, *([self._startup] if self._startup else [])])

    # ----- tools catalogue ---------------------------------------------------------------

    def _relisted(self, tools: list[types.Tool]) -> None:
        self.info.tools = tools
        self.generation += 1
        if self._on_tools_changed is not None:
            self._on_tools_changed(self)

    async def current_tools(self, *, relist: bool = False) -> list[types.Tool]:
        """The tools as a call made now would find them: waits for an announced change to be
        listed (bounded by ``startup_timeout_sec``); ``relist`` lists again first. Raises
        :class:`McpUnavailable` when the current tools cannot be known."""
        return await self._tools.current(lambda: self.info.tools, self._live, relist=relist)

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
        token = current_call.set((self, control))
        try:
            with control.scope:
                if self._direct is not None:
                    result = await self._call_direct(self._direct, client, tool, arguments, meta, progress)
                else:
                    result = await client.call_tool(
                        tool, arguments, progress_callback=progress, meta=meta  # type: ignore[arg-type]  # SDK's protocol, TypedDict
                    )
                return result, control
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED and self._child:
                await self._exit_recorded()
            raise
        finally:
            current_call.reset(token)
            self._inflight.discard(control)
        raise TimeoutError(limit)

    async def _call_direct(
        self,
        lane: DirectCalls,
        client: Client,
        tool: str,
        arguments: dict[str, Any],
        meta: dict[str, Any] | None,
        progress: ProgressFn,
    ) -> types.CallToolResult:
        """What ``Client.call_tool`` does on a stdio connection, each round on the direct lane."""
        result = await lane.call_tool(tool, arguments, meta, progress)
        if isinstance(result, types.InputRequiredResult):

            async def again(
                responses: types.InputResponses | None, state: str | None
            ) -> types.CallToolResult | types.InputRequiredResult:
                return await lane.call_tool(
                    tool, arguments, meta, progress, input_responses=responses, request_state=state
                )

            # The SDK's own driver asks through the same callbacks a legacy server's requests use.
            result = await client._drive_input_required(result, again)  # noqa: SLF001
        if not result.is_error:
            await self._tools.check_output(tool, result)
        return result

    async def _exit_recorded(self) -> None:
        """Wait (at most 2 s) until the exit of a server that cut a call off is recorded, so that
        what reads the server's state after the call's error sees it down, not still ready."""
        with anyio.move_on_after(2.0):
            await self._down.wait()  # ``_watch_exit`` records it once the exit code is known

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
        return await paginate(
            self.name, "resources/list", lambda cursor: client.list_resources(cursor=cursor), "resources", self._warn
        )

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        return await self._live().read_resource(uri)

    async def list_prompts(self) -> list[types.Prompt]:
        client = self._live()
        return await paginate(
            self.name, "prompts/list", lambda cursor: client.list_prompts(cursor=cursor), "prompts", self._warn
        )

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> types.GetPromptResult:
        return await self._live().get_prompt(name, arguments)
