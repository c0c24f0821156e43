"""Session events as MCP progress and log notifications for the caller of one tool call.

Text deltas are coalesced (one progress message per burst, not one per token) so a chatty
model cannot flood the client; every other event that tells the caller something becomes one
progress step, and the notable ones also a log message.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from nbagent.protocol import Event
from nbagent.textsafe import one_line

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
Log = Callable[[str, Any], Awaitable[None]]

LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
COALESCE_SECONDS = 0.25
MAX_MESSAGE = 300


def _clip(text: str, limit: int = MAX_MESSAGE) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(event: Event) -> tuple[str | None, str | None, dict[str, Any] | None]:
    """``(progress message, log level, log data)`` for one event; ``None`` parts are not sent."""
    e: Any = event.msg
    kind = e.type
    if kind == "turn_started":
        return "turn started", "info", {"event": kind, "turn_id": event.turn_id, "model": e.model}
    if kind == "tool_call_begin":
        where = f" ({e.server}/{e.raw_tool})" if e.server else ""
        return f"calling {e.tool}{where}", "info", {"event": kind, "call_id": e.call_id, "tool": e.tool,
                                                     "server": e.server, "arguments": e.arguments}
    if kind == "tool_call_end":
        return (f"{e.tool}: {e.status}", "info" if not e.is_error else "warning",
                {"event": kind, "call_id": e.call_id, "tool": e.tool, "status": e.status, "output": _clip(e.output)})
    if kind == "approval_requested":
        return f"approval needed for {e.tool}", "notice", {"event": kind, "call_id": e.call_id, "tool": e.tool}
    if kind == "approval_resolved":
        return (f"approval {e.decision} ({e.by})", "info",
                {"event": kind, "call_id": e.call_id, "decision": e.decision, "by": e.by})
    if kind == "elicitation_requested":
        return f"{e.server} asks a question", "notice", {"event": kind, "server": e.server, "message": e.message}
    if kind == "elicitation_resolved":
        return f"question answered: {e.action} ({e.by})", "info", {"event": kind, "action": e.action, "by": e.by}
    if kind == "progress":
        msg = f"{one_line(e.call_id)}: {e.progress:g}" + (f"/{e.total:g}" if e.total else "") + (f" {e.message}" if e.message else "")
        return msg, None, None
    if kind == "reasoning":
        return _clip("reasoning: " + e.text), None, None
    if kind == "mcp_log":
        return None, e.level if e.level in LEVELS else "info", {"event": kind, "server": e.server, "data": e.data}
    if kind == "mcp_startup_update":
        return f"MCP server {e.server}: {e.status}", "error" if e.status == "failed" else "info", {
            "event": kind, "server": e.server, "status": e.status, "error": e.error}
    if kind == "warning":
        return None, "warning", {"event": kind, "message": e.message}
    if kind in ("error", "turn_failed"):
        return None, "error", {"event": kind, "code": e.code, "message": e.message}
    if kind == "turn_aborted":
        return f"turn aborted: {e.reason}", "warning", {"event": kind, "reason": e.reason}
    if kind == "turn_completed":
        return "turn completed", "info", {"event": kind}
    return None, None, None


class Forwarder:
    """Turns the events of one round into notifications on that round's request. The events
    come redacted as the thread's rollout is, text by its stream (``Session.subscribe``): an inner
    server may hand back the secrets it was given, and the outer client is no more trusted with
    them than the disk."""

    def __init__(self, progress: Progress, log: Log, *, min_level: str = "info") -> None:
        self._progress = progress
        self._log = log
        self._min = LEVELS.index(min_level) if min_level in LEVELS else 1
        self._step = 0
        self._pending = ""
        self._since = 0.0
        self.sent_progress = 0

    async def _send(self, message: str) -> None:
        self._step += 1
        self.sent_progress += 1
        try:
            await self._progress(float(self._step), None, message)
        except Exception:  # a client that went away must not break the turn
            pass

    async def flush(self) -> None:
        if self._pending:
            text, self._pending = self._pending, ""
            await self._send(_clip(text.strip() or text))

    async def __call__(self, event: Event) -> None:
        msg = event.msg
        if msg.type == "agent_message_delta":
            if not self._pending:
                self._since = time.monotonic()
            self._pending += msg.delta
            if time.monotonic() - self._since >= COALESCE_SECONDS or len(self._pending) >= MAX_MESSAGE:
                await self.flush()
            return
        if msg.type == "reasoning_delta":
            return
        await self.flush()
        message, level, data = describe(event)
        if message:
            await self._send(message)
        if level and data is not None and LEVELS.index(level) >= self._min:
            try:
                await self._log(level, data)
            except Exception:
                pass
