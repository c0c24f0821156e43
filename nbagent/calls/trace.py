"""W3C trace context for tool calls (DESIGN §7): one trace per turn, so a turn's calls line up
in a tracing backend, and a fresh span per call, whatever tool source runs it."""

from __future__ import annotations

import hashlib
import os
import re

_TRACEPARENT_RE = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")
_TRACE_ID_RE = re.compile(r"^[0-9a-f]{32}$")


def trace_id_for_turn(turn_id: str) -> str:
    """A stable 32-hex trace id derived from the turn id: every call of a turn shares it."""
    tid = hashlib.sha256(turn_id.encode("utf-8")).hexdigest()[:32]
    return tid if tid.strip("0") else "0" * 31 + "1"  # all-zero ids are invalid in W3C


def _random_hex(bits: int) -> str:
    """Non-zero random ids, as OpenTelemetry's SDK makes them: unique, not secret. One
    ``os.urandom`` each: in a tool call it costs less than the ``random`` module's large state
    (read cold, once a call)."""
    while not (raw := os.urandom(bits // 8)).strip(b"\0"):
        pass
    return raw.hex()


def new_traceparent(trace_id: str | None = None) -> str:
    """``00-<trace>-<span>-01``: a fresh span, on ``trace_id`` or on a new random trace."""
    if trace_id is None:
        trace_id = _random_hex(128)
    elif not _TRACE_ID_RE.fullmatch(trace_id) or not trace_id.strip("0"):
        raise ValueError(f"trace id must be 32 lowercase hex digits, not all zero: {trace_id!r}")
    return span_of(trace_id)


def span_of(trace_id: str) -> str:
    """A fresh span on a trace id already known to be valid (``trace_id_for_turn``'s), as
    ``new_traceparent`` makes one without checking the id again: a turn's every call has one."""
    return f"00-{trace_id}-{_random_hex(64)}-01"


def is_valid_traceparent(value: object) -> bool:
    m = _TRACEPARENT_RE.fullmatch(value) if isinstance(value, str) else None
    return bool(m and m.group(1).strip("0") and m.group(2).strip("0"))
