"""The ``_meta`` nbagent injects into every ``tools/call`` (DESIGN §7).

Servers get the thread, turn and call ids (for their own logs), a W3C ``traceparent`` (one
trace per turn, so a turn's calls line up in a tracing backend) and a ``progressToken``.
Prefixes the MCP spec reserves (``io.modelcontextprotocol/``, ``dev.mcp/`` and any whose
second label is ``modelcontextprotocol`` or ``mcp``) are never written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nbagent.calls.trace import is_valid_traceparent, new_traceparent, trace_id_for_turn
from nbagent.protocol.tools import CallInfo

THREAD_KEY = "nbagent/threadId"
TURN_KEY = "nbagent/turnId"
CALL_KEY = "nbagent/callId"
TRACEPARENT_KEY = "traceparent"
PROGRESS_KEY = "progressToken"

RESERVED_META_PREFIXES = ("io.modelcontextprotocol/", "dev.mcp/")


def is_reserved_meta_key(key: str) -> bool:
    """Whether ``key`` sits under a prefix the MCP spec reserves for itself."""
    if "/" not in key:
        return False
    labels = key.split("/", 1)[0].split(".")
    return len(labels) >= 2 and labels[1] in ("modelcontextprotocol", "mcp")


def call_meta(call: CallInfo, progress_token: str | int, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The ``_meta`` object of one ``tools/call``.

    ``call.traceparent`` is used when it is well-formed; otherwise a span on the turn's trace is
    made, so a bad value never reaches a server. ``extra`` keys are merged beneath ours, except
    reserved ones, which are dropped.
    """
    meta: dict[str, Any] = {}
    if extra:
        meta.update({k: v for k, v in extra.items() if isinstance(k, str) and not is_reserved_meta_key(k)})
    traceparent = call.traceparent
    if not is_valid_traceparent(traceparent):
        traceparent = new_traceparent(trace_id_for_turn(call.turn_id))
    meta.update(
        {
            THREAD_KEY: call.thread_id,
            TURN_KEY: call.turn_id,
            CALL_KEY: call.call_id,
            TRACEPARENT_KEY: traceparent,
            PROGRESS_KEY: progress_token,
        }
    )
    return meta
