"""The ``_meta`` nbagent injects into every ``tools/call`` (DESIGN §7).

Servers get the thread, turn and call ids (for their own logs), a W3C ``traceparent`` (one
trace per turn, so a turn's calls line up in a tracing backend) and a ``progressToken``.
Prefixes the MCP spec reserves (``io.modelcontextprotocol/``, ``dev.mcp/`` and any whose
second label is ``modelcontextprotocol`` or ``mcp``) are never written.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Mapping
from typing import Any

from nbagent.protocol.tools import CallInfo

THREAD_KEY = "nbagent/threadId"
TURN_KEY = "nbagent/turnId"
CALL_KEY = "nbagent/callId"
TRACEPARENT_KEY = "traceparent"
PROGRESS_KEY = "progressToken"

RESERVED_META_PREFIXES = ("io.modelcontextprotocol/", "dev.mcp/")

_TRACEPARENT_RE = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")
_TRACE_ID_RE = re.compile(r"^[0-9a-f]{32}$")


def is_reserved_meta_key(key: str) -> bool:
    """Whether ``key`` sits under a prefix the MCP spec reserves for itself."""
    if "/" not in key:
        return False
    labels = key.split("/", 1)[0].split(".")
    return len(labels) >= 2 and labels[1] in ("modelcontextprotocol", "mcp")


def trace_id_for_turn(turn_id: str) -> str:
    """A stable 32-hex trace id derived from the turn id: every call of a turn shares it."""
    tid = hashlib.sha256(turn_id.encode("utf-8")).hexdigest()[:32]
    return tid if tid.strip("0") else "0" * 31 + "1"  # all-zero ids are invalid in W3C


def _span_id() -> str:
    while True:
        span = secrets.token_hex(8)
        if span.strip("0"):
            return span


def new_traceparent(trace_id: str | None = None) -> str:
    """``00-<trace>-<span>-01``: a fresh span, on ``trace_id`` or on a new random trace."""
    if trace_id is None:
        trace_id = secrets.token_hex(16)
        if not trace_id.strip("0"):
            trace_id = "0" * 31 + "1"
    elif not _TRACE_ID_RE.fullmatch(trace_id) or not trace_id.strip("0"):
        raise ValueError(f"trace id must be 32 lowercase hex digits, not all zero: {trace_id!r}")
    return f"00-{trace_id}-{_span_id()}-01"


def is_valid_traceparent(value: object) -> bool:
    m = _TRACEPARENT_RE.fullmatch(value) if isinstance(value, str) else None
    return bool(m and m.group(1).strip("0") and m.group(2).strip("0"))


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
