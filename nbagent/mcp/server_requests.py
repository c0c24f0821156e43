"""What a server sends the client unasked: elicitations, sampling requests, log messages and
change notifications (DESIGN §9, §10). Handled inside the SDK's callbacks, so each only passes
the request on (to the person, or to the re-list) and never waits on the connection itself."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types

from nbagent.config import McpServerConfig
from nbagent.deliver import deliver
from nbagent.mcp.deadline import CallControl, current_call, paused
from nbagent.protocol import ElicitationRequested, EventMsg, McpLog, WarningEvent, new_id
from nbagent.protocol.elicitation import ElicitOutcome

log = logging.getLogger(__name__)

EventFn = Callable[[EventMsg], object]
ElicitFn = Callable[[ElicitationRequested], Awaitable[ElicitOutcome]]


class ServerRequests:
    """The SDK callbacks of one connection (``owner``), whose in-flight calls are ``inflight``."""

    def __init__(
        self,
        owner: object,
        name: str,
        cfg: McpServerConfig,
        *,
        on_event: EventFn,
        on_elicit: ElicitFn,
        inflight: set[CallControl],
        on_tools_changed: Callable[[], None],
    ) -> None:
        self._owner = owner
        self._name = name
        self._cfg = cfg
        self._on_event = on_event
        self._on_elicit = on_elicit
        self._inflight = inflight
        self._on_tools_changed = on_tools_changed

    def _emit(self, event: EventMsg) -> None:
        deliver(self._on_event, event, log)  # a broken subscriber must not break the connection

    async def message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._on_tools_changed()

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self._emit(McpLog(server=self._name, level=str(params.level), logger=params.logger, data=params.data))

    async def sampling(self, context: Any, params: Any) -> types.ErrorData:
        if self._cfg.sampling:
            message = (
                f"MCP server {self._name!r} asked to sample the model; sampling = true is set, "
                "but nbagent does not support sampling yet, so the request was declined"
            )
        else:
            message = f"MCP server {self._name!r} asked to sample the model; declined (sampling is not enabled)"
        self._emit(WarningEvent(message=message))
        return types.ErrorData(code=types.INVALID_REQUEST, message="sampling is not supported by this client")

    def _targets(self) -> tuple[list[CallControl], str | None]:
        """Which in-flight calls an elicitation belongs to, and their call id when knowable."""
        current = current_call.get()
        if current is not None and current[0] is self._owner:
            return [current[1]], current[1].call_id
        inflight = list(self._inflight)
        return inflight, inflight[0].call_id if len(inflight) == 1 else None

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        targets, call_id = self._targets()
        if isinstance(params, types.ElicitRequestURLParams):
            event = ElicitationRequested(
                request_id=new_id("elicit"), server=self._name, mode="url", message=params.message,
                url=params.url, call_id=call_id,
            )  # fmt: skip
        else:
            event = ElicitationRequested(
                request_id=new_id("elicit"), server=self._name, mode="form", message=params.message,
                requested_schema=dict(params.requested_schema), call_id=call_id,
            )  # fmt: skip
        with paused(targets):
            try:
                outcome = await self._on_elicit(event)
            except Exception as exc:  # noqa: BLE001 - a broken front end cancels, never hangs the call
                why = f"MCP server {self._name!r}: elicitation handler failed ({exc}); cancelled"
                self._emit(WarningEvent(message=why))
                outcome = ElicitOutcome(action="cancel")
        # URL mode carries no content: the user acted in their browser, not in a form.
        content = outcome.content if outcome.action == "accept" and event.mode == "form" else None
        return types.ElicitResult(action=outcome.action, content=content)
