"""Unit tests of the shared retry policy and error mapping."""

from __future__ import annotations

import pytest

from nbagent.models import retry as retry_module
from nbagent.models.base import ModelError, TextDelta
from nbagent.models.retry import ErrorContext, RetryPolicy, StreamFailure, classify, stream_with_retry

CTX = ErrorContext(base_url="http://h/v1", model="m", wire_api="chat", endpoint="/chat/completions",
                   api_key="sk-real-key-987654321")


def test_backoff_grows_and_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retry_module, "BACKOFF_BASE_SEC", 1.0)
    monkeypatch.setattr(retry_module, "BACKOFF_MAX_SEC", 4.0)
    policy = RetryPolicy()
    for attempt in range(6):
        delay = policy.delay(attempt, None)
        assert 0.5 <= delay <= min(4.0, 2**attempt)
    assert policy.delay(3, 0.25) == 0.25


@pytest.mark.parametrize(
    ("failure", "code", "retryable"),
    [
        (StreamFailure("boom", code="server_error"), "server", True),
        (StreamFailure("slow down", code="rate_limit_exceeded"), "rate_limit", True),
        (StreamFailure("too long", code="context_length_exceeded"), "context_length", False),
        (StreamFailure("stream ended"), "connection", True),
        (StreamFailure("stopped (max_output_tokens)", code="incomplete"), "other", False),
    ],
)
def test_classify_stream_failures(failure: StreamFailure, code: str, retryable: bool) -> None:
    result = classify(failure, CTX, attempts=1)
    assert (result.error.code, result.retryable) == (code, retryable)
    assert "http://h/v1" in str(result.error)


def test_redaction_of_key_and_key_like_strings() -> None:
    failure = StreamFailure("bad key sk-real-key-987654321 and sk-abc1234567890xyz", status=401)
    message = str(classify(failure, CTX, attempts=1).error)
    assert "987654321" not in message and "abc1234567890" not in message


async def test_stream_with_retry_retries_only_before_output() -> None:
    calls = 0
    sleeps: list[float] = []

    async def fail_first():  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls == 1:
            raise StreamFailure("early", code="server_error")
        yield TextDelta(delta="ok")

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    out = [e async for e in stream_with_retry(fail_first, CTX, RetryPolicy(max_retries=2, base_delay=0.01), sleep=sleep)]
    assert [e.delta for e in out] == ["ok"] and calls == 2 and len(sleeps) == 1

    async def fail_late():  # type: ignore[no-untyped-def]
        yield TextDelta(delta="half")
        raise StreamFailure("late", code="server_error")

    seen = []
    with pytest.raises(ModelError) as info:
        async for event in stream_with_retry(fail_late, CTX, RetryPolicy(max_retries=5), sleep=sleep):
            seen.append(event)
    assert info.value.code == "server" and len(seen) == 1 and "not retried" in str(info.value)


def test_context_repr_hides_the_key() -> None:
    assert "987654321" not in repr(CTX)
