"""Call metadata: the keys, the trace context, and no reserved prefixes."""

from __future__ import annotations

import re

import pytest

from nbagent.calls.trace import new_traceparent, span_of, trace_id_for_turn
from nbagent.mcp.meta import call_meta, is_reserved_meta_key
from nbagent.protocol.tools import CallInfo

TP = re.compile(r"^00-[0-9a-f]{32}-[0-9a-f]{16}-01$")


def test_call_meta_keys() -> None:
    call = CallInfo(thread_id="thr_1", turn_id="turn_1", call_id="call_1")
    meta = call_meta(call, "tok-1")
    assert set(meta) == {"nbagent/threadId", "nbagent/turnId", "nbagent/callId", "traceparent", "progressToken"}
    assert (
        meta["nbagent/threadId"] == "thr_1"
        and meta["nbagent/turnId"] == "turn_1"
        and meta["nbagent/callId"] == "call_1"
    )
    assert meta["progressToken"] == "tok-1"
    assert TP.fullmatch(meta["traceparent"])


def test_one_trace_per_turn_new_span_per_call() -> None:
    a = call_meta(CallInfo(thread_id="t", turn_id="turn_9", call_id="c1"), 1)["traceparent"]
    b = call_meta(CallInfo(thread_id="t", turn_id="turn_9", call_id="c2"), 2)["traceparent"]
    c = call_meta(CallInfo(thread_id="t", turn_id="turn_8", call_id="c3"), 3)["traceparent"]
    assert a.split("-")[1] == b.split("-")[1] == trace_id_for_turn("turn_9")
    assert a.split("-")[2] != b.split("-")[2]
    assert c.split("-")[1] != a.split("-")[1]


def test_given_traceparent_used_verbatim_if_valid() -> None:
    tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    assert call_meta(CallInfo(thread_id="t", turn_id="u", call_id="c", traceparent=tp), 0)["traceparent"] == tp
    bad = call_meta(CallInfo(thread_id="t", turn_id="u", call_id="c", traceparent="garbage"), 0)["traceparent"]
    assert TP.fullmatch(bad) and bad.split("-")[1] == trace_id_for_turn("u")


def test_reserved_keys_never_written() -> None:
    extra = {
        "io.modelcontextprotocol/x": 1,
        "dev.mcp/y": 2,
        "org.modelcontextprotocol.api/z": 3,
        "com.example/ok": 4,
        "plain": 5,
    }
    meta = call_meta(CallInfo(thread_id="t", turn_id="u", call_id="c"), 0, extra=extra)
    assert not any(k.startswith(("io.modelcontextprotocol/", "dev.mcp/")) or is_reserved_meta_key(k) for k in meta)
    assert meta["com.example/ok"] == 4 and meta["plain"] == 5


def test_extra_cannot_override_ours() -> None:
    meta = call_meta(
        CallInfo(thread_id="t", turn_id="u", call_id="c"), 7, extra={"progressToken": "x", "nbagent/callId": "forged"}
    )
    assert meta["progressToken"] == 7 and meta["nbagent/callId"] == "c"


def test_reserved_key_rule() -> None:
    assert is_reserved_meta_key("io.modelcontextprotocol/a")
    assert is_reserved_meta_key("dev.mcp/a")
    assert is_reserved_meta_key("tools.mcp.com/a")
    assert not is_reserved_meta_key("nbagent/threadId")
    assert not is_reserved_meta_key("progressToken")


def test_new_traceparent() -> None:
    assert TP.fullmatch(new_traceparent())
    tid = "4bf92f3577b34da6a3ce929d0e0e4736"
    tp = new_traceparent(tid)
    assert tp.startswith(f"00-{tid}-") and TP.fullmatch(tp)
    assert new_traceparent(tid) != tp
    for bad in ("0" * 32, "XYZ", "4BF92F3577B34DA6A3CE929D0E0E4736"):
        with pytest.raises(ValueError):
            new_traceparent(bad)


def test_a_turns_span_is_new_each_call_and_never_all_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    tid = trace_id_for_turn("turn_1")
    assert span_of(tid).startswith(f"00-{tid}-") and TP.fullmatch(span_of(tid)) and span_of(tid) != span_of(tid)
    draws = iter([bytes(8), bytes(7) + b"\x01"])
    monkeypatch.setattr("nbagent.calls.trace.os.urandom", lambda n: next(draws))
    assert span_of(tid) == f"00-{tid}-0000000000000001-01"  # an all-zero span id is invalid: drawn again


def test_trace_id_for_turn_is_stable_and_valid() -> None:
    assert trace_id_for_turn("turn_1") == trace_id_for_turn("turn_1")
    assert re.fullmatch(r"[0-9a-f]{32}", trace_id_for_turn("turn_1")) and trace_id_for_turn("turn_1").strip("0")
