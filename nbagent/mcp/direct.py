"""``tools/call`` on a stdio connection without the SDK's per-request machinery.

Every request the SDK's ``Client`` sends goes through its dispatcher: a request model built and
dumped, a memory stream made for the one reply, a tracing span, the reply routed by a read loop
into that stream, then validated twice. For the one request an agent makes over and over that
cost more than the server's own work and the pipes together (``bench/mcp.py``: the SDK's call
~300 µs of CPU above a bare JSON-RPC client's). :class:`DirectCalls` sits between the transport's
streams and the SDK: it writes a ``tools/call`` itself and takes that call's reply and progress
out of the read stream before the SDK sees them. Everything else (listing, server requests such
as an elicitation in the middle of a call, notifications) passes through to the SDK untouched.

What the call keeps from the SDK's: the protocol stamp a 2026-07-28 connection puts in every
request's ``_meta`` (copied from the last request the SDK sent, so it is the SDK's own), the
result validated against the negotiated version's schema (``mcp_types.methods``), an
``InputRequiredResult``'s rounds driven by the SDK's own driver, progress routed by token, a
``notifications/cancelled`` when the caller gives up, and ``MCPError(CONNECTION_CLOSED)`` when the
server goes away mid-call. Its request ids are strings (``call-1-…``, as the SDK's own
``listen-1`` is, so they never meet the SDK's integer ids) that end unguessably, so a server
cannot answer a call before it is made.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import dataclass, field
from itertools import count
from secrets import token_hex
from typing import Any, TypeGuard

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from nbagent.mcp.wire import watched
from nbagent.protocol.tools import ProgressFn

logger = logging.getLogger(__name__)

Reply = types.JSONRPCResponse | types.JSONRPCError

STAMP_KEYS = (
    types.PROTOCOL_VERSION_META_KEY,
    types.CLIENT_INFO_META_KEY,
    types.CLIENT_CAPABILITIES_META_KEY,
    types.LOG_LEVEL_META_KEY,
)
"""What the SDK stamps into a 2026-07-28 request's ``_meta`` (none of it on a legacy one)."""

CANCEL_WRITE_SEC = 5.0
"""Bound on writing the ``notifications/cancelled`` of a call given up (as the SDK's)."""

_CLOSED = "Connection closed"


@dataclass
class _Pending:
    reply: anyio.Event = field(default_factory=anyio.Event)
    message: Reply | MCPError | None = None
    on_progress: ProgressFn | None = None


class DirectCalls:
    """The ``tools/call`` lane of one stdio connection: its transport shows the lane every
    message as it is read (:meth:`take`), and is wrapped (:meth:`wrap`) before the SDK's
    ``Client`` is made on it."""

    def __init__(self, version: Callable[[], str | None]) -> None:
        self._version = version
        """The negotiated protocol version (the SDK's ``Client.protocol_version``)."""
        self._pending: dict[str, _Pending] = {}
        self._ids = count(1)
        self._write: Any = None
        self._stamp: dict[str, Any] = {}
        self._updates: set[asyncio.Task[None]] = set()
        self._handed = 0
        """Messages the stdio reader handed on to the SDK; ``_seen``: those the SDK has read."""
        self._seen = 0

    def wrap(self, transport: AbstractAsyncContextManager[Any]) -> AbstractAsyncContextManager[Any]:
        @asynccontextmanager
        async def streams() -> AsyncIterator[tuple[Any, Any]]:
            async with watched(transport, received=self._received, sent=self._sent, ended=self._close) as (read, write):
                self._write = write
                try:
                    yield read, write
                finally:
                    self._write = None
                    self._close()

        return streams()

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        meta: dict[str, Any] | None = None,
        on_progress: ProgressFn | None = None,
        *,
        input_responses: types.InputResponses | None = None,
        request_state: str | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """One ``tools/call`` round; raises ``MCPError`` for an error reply or a lost server."""
        if self._write is None:
            raise MCPError(code=types.CONNECTION_CLOSED, message=_CLOSED)
        # Unguessable: a server cannot answer a call before it is made.
        request_id = f"call-{next(self._ids)}-{token_hex(4)}"
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if input_responses is not None:
            params["inputResponses"] = {
                key: response.model_dump(by_alias=True, mode="json", exclude_none=True)
                for key, response in input_responses.items()
            }
        if request_state is not None:
            params["requestState"] = request_state
        # The request id doubles as the progress token, as the SDK's does.
        params["_meta"] = {**(meta or {}), **self._stamp, "progressToken": request_id}
        pending = self._pending[request_id] = _Pending(on_progress=on_progress)
        try:
            try:
                request = types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params=params)
                await self._write.send(SessionMessage(request))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise MCPError(code=types.CONNECTION_CLOSED, message=_CLOSED) from None
            try:
                await pending.reply.wait()
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_WRITE_SEC):
                    await self._cancel(request_id)
                raise
        finally:
            del self._pending[request_id]
        return self._result(pending.message)

    def _result(self, message: Reply | MCPError | None) -> types.CallToolResult | types.InputRequiredResult:
        if isinstance(message, MCPError):
            raise message
        if isinstance(message, types.JSONRPCError):
            error = message.error
            raise MCPError(code=error.code, message=error.message, data=error.data)
        assert message is not None  # the reply was set before the event
        version = self._version() or "2025-11-25"
        result = methods.parse_server_result("tools/call", version, message.result)
        if isinstance(result, types.InputRequiredResult) and version in MODERN_PROTOCOL_VERSIONS:
            return result
        if not isinstance(result, types.CallToolResult):
            raise RuntimeError(f"the server answered tools/call with a {type(result).__name__}, not a tool result")
        return result

    async def _cancel(self, request_id: str) -> None:
        params: dict[str, Any] = {"requestId": request_id, "reason": "caller cancelled"}
        if self._stamp:
            params["_meta"] = dict(self._stamp)
        notification = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params=params)
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):  # gone: nothing left to stop
            if self._write is not None:
                await self._write.send(SessionMessage(notification))

    def _sent(self, item: Any) -> Any:
        """Keep the SDK's stamp, from the requests it sends (not the lane's own)."""
        message = item.message if isinstance(item, SessionMessage) else None
        if (
            isinstance(message, types.JSONRPCRequest)
            and message.method != "tools/call"
            and isinstance(meta := (message.params or {}).get("_meta"), dict)
        ):
            self._stamp = {key: meta[key] for key in STAMP_KEYS if key in meta}
        return item

    def take(self, item: SessionMessage | Exception) -> bool:
        """Whether ``item``, just read, was this lane's and is taken now: a reply or progress of
        one of its calls, which then goes no further. Only while the SDK has taken everything
        read before it: a message read earlier (a ``tools/list_changed`` sent just before the
        reply) must reach the SDK's handlers before the call returns, as it would have through
        the SDK's own call, so until then the lane's messages queue behind it (:meth:`_received`)."""
        if self._handed == self._seen and self._own(item):
            return True
        self._handed += 1
        return False

    def _received(self, item: Any) -> Any:
        """What the SDK reads next: ``None`` (taken) for this lane's own."""
        self._seen += 1
        return None if self._own(item) else item

    def _own(self, item: SessionMessage | Exception) -> bool:
        """Whether ``item`` is a reply or progress of one of this lane's calls (then handled)."""
        if not self._pending or not isinstance(item, SessionMessage):
            return False
        message = item.message
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            pending = self._pending.get(message.id) if isinstance(message.id, str) else None
            if pending is None or pending.reply.is_set():
                return False
            pending.message = message
            pending.reply.set()
            return True
        if isinstance(message, types.JSONRPCNotification) and message.method == "notifications/progress":
            params = message.params or {}
            token = params.get("progressToken")
            pending = self._pending.get(token) if isinstance(token, str) else None
            if pending is None:
                return False
            if pending.on_progress is not None and _number(progress := params.get("progress")):
                total, text = params.get("total"), params.get("message")
                update = pending.on_progress(
                    float(progress), float(total) if _number(total) else None, text if isinstance(text, str) else None
                )
                # A task, as the SDK's: a slow front end never holds up the reading.
                task = asyncio.get_running_loop().create_task(_logged(update))
                self._updates.add(task)
                task.add_done_callback(self._updates.discard)
            return True
        return False

    def _close(self) -> None:
        """The transport is gone: every call still waiting fails as the SDK's would."""
        for pending in self._pending.values():
            if not pending.reply.is_set():
                pending.message = MCPError(code=types.CONNECTION_CLOSED, message=_CLOSED)
                pending.reply.set()


def _number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


async def _logged(update: Awaitable[None]) -> None:
    try:
        await update
    except Exception:  # a front end's failure costs that one update, never the call
        logger.exception("progress callback raised")
