"""Retry and error mapping shared by every HTTP model client (the only copy of this logic).

Policy on failures in the middle of a stream: a request is retried only while *nothing*
has been yielded to the caller yet (a 500/429 before the first delta, a connection drop
right after ``response.created``). Once a text or tool-call delta has gone out it cannot be
taken back, so a later failure raises ``ModelError`` instead of silently repeating text;
the core turns it into an ``error`` event and keeps the partial reply.

Messages name the base_url and the model and say what to change; the API key never
appears in them (it is redacted even when a server echoes it back).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import socket
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

import openai

from nbagent.models.base import ModelError, ModelErrorCode, ModelEvent

BACKOFF_BASE_SEC = 0.5
"""First retry delay; doubles per attempt. Tests lower it (module attribute, read per call)."""
BACKOFF_MAX_SEC = 8.0
MAX_RETRY_AFTER_SEC = 30.0
"""A ``Retry-After`` longer than this is not waited for: the error is raised at once."""

_CONTEXT_WORDS = re.compile(
    r"context[_ ]length|context window|maximum context|too many tokens|prompt is too long|exceeds the .*context",
    re.IGNORECASE,
)
_MODEL_MISSING = re.compile(
    r"model.*(not found|does not exist|not exist|unknown|no such|not available|try pulling)"
    r"|(unknown|invalid) model",
    re.IGNORECASE,
)
_KEY_LIKE = re.compile(r"\b(sk|key|tok)-[A-Za-z0-9*_\-]{6,}")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry; ``None`` fields read the module constants at call time."""

    max_retries: int = 4
    base_delay: float | None = None
    max_delay: float | None = None
    max_retry_after: float | None = None

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with full jitter, or the server's small ``Retry-After``."""
        if retry_after is not None:
            return max(0.0, retry_after)
        base = BACKOFF_BASE_SEC if self.base_delay is None else self.base_delay
        cap = BACKOFF_MAX_SEC if self.max_delay is None else self.max_delay
        return random.uniform(base / 2, min(cap, base * 2**attempt))

    @property
    def retry_after_cap(self) -> float:
        return MAX_RETRY_AFTER_SEC if self.max_retry_after is None else self.max_retry_after


@dataclass(frozen=True)
class ErrorContext:
    """What an error message needs to say what to fix. ``api_key`` is used only for redaction."""

    base_url: str
    model: str
    wire_api: str
    endpoint: str
    key_hint: str = "OPENAI_API_KEY"
    provider: str = "openai"
    api_key: str | None = field(default=None, repr=False)

    def redact(self, text: str) -> str:
        if self.api_key and len(self.api_key) >= 4:
            text = text.replace(self.api_key, "***")
        return _KEY_LIKE.sub(r"\1-***", text)


class StreamFailure(Exception):
    """An error reported inside a stream (Responses ``error``/``response.failed`` events, a
    stream that ends early), classified by the same rules as HTTP errors."""

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status

    @classmethod
    def stopped_early(cls, reason: str) -> StreamFailure:
        """A reply the server cut short (length, content filter): the same words and code from
        every wire API, so a person and the retry rules see one kind of failure."""
        return cls(f"the response stopped early ({reason})", code="incomplete")


class BadReply(StreamFailure):
    """A 200 reply that does not follow the wire API (not an event stream, a field of the wrong
    type): asking again would get, and pay for, the same reply."""


@dataclass
class Failure:
    error: ModelError
    retryable: bool
    retry_after: float | None = None


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError):
        return None


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _is_connect_failure(exc: BaseException) -> bool:
    """Refused, DNS or unreachable: the base_url points at nothing that answers."""
    for link in _chain(exc):
        if isinstance(link, ConnectionRefusedError | socket.gaierror):
            return True
        if type(link).__name__ in ("ConnectError", "ConnectTimeout"):
            return True
    return False


def _server_message(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    if isinstance(body, str) and body.strip():
        return body.strip()[:300]
    return getattr(exc, "message", None) or str(exc)


def classify(exc: BaseException, ctx: ErrorContext, *, attempts: int) -> Failure:
    """Map an SDK exception or a ``StreamFailure`` to a ``ModelError`` with a useful message.

    Without a reply it is the connection; with one, first what asking again cannot fix (the
    key, the model, the context, the endpoint, a reply that breaks the API), then what passes
    (rate limit, server error, a broken stream), then any other refusal.
    """
    where = f"{ctx.base_url} (model {ctx.model!r}, wire_api = {ctx.wire_api!r})"
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if isinstance(exc, openai.APIConnectionError):
        return _no_reply(exc, ctx, where, tries)
    reply = _Reply.of(exc, ctx, where, tries)
    return _lasting(reply) or _passing(reply) or _refused(reply)


def _no_reply(exc: openai.APIConnectionError, ctx: ErrorContext, where: str, tries: str) -> Failure:
    """Nothing answers, nothing answered in time, or the connection dropped: all retried."""
    if _is_connect_failure(exc):
        message = (
            f"cannot connect to {where}{tries}: nothing answers there (connection refused, "
            "unknown host or connect timeout). Start the model server, or fix base_url in "
            f"[model_providers.{ctx.provider}] (or OPENAI_BASE_URL)."
        )
        return Failure(ModelError("bad_base_url", message), retryable=True)
    if isinstance(exc, openai.APITimeoutError):
        message = (
            f"{where} did not answer in time{tries}. Check the server, or raise "
            f"stream_idle_timeout_sec in [model_providers.{ctx.provider}]."
        )
        return Failure(ModelError("connection", message), retryable=True)
    message = (
        f"lost the connection to {where}{tries}: {ctx.redact(_cause_text(exc))}. "
        "Check the server and the network, then ask again."
    )
    return Failure(ModelError("connection", message), retryable=True)


@dataclass(frozen=True)
class _Reply:
    """What the server answered (an HTTP error or an error inside the stream), as classified."""

    exc: BaseException
    ctx: ErrorContext
    where: str
    tries: str
    status: int | None
    code: str
    message: str
    """The server's own words, redacted."""

    @classmethod
    def of(cls, exc: BaseException, ctx: ErrorContext, where: str, tries: str) -> _Reply:
        status = getattr(exc, "status_code", None) if isinstance(exc, openai.APIStatusError) else None
        if isinstance(exc, StreamFailure):
            status = exc.status
        code = str(getattr(exc, "code", None) or "").lower()  # a server may give a number
        return cls(exc, ctx, where, tries, status, code, ctx.redact(_server_message(exc)))

    @property
    def said(self) -> str:
        return f" Server said: {self.message}" if self.message else ""

    def fail(self, code: ModelErrorCode, text: str, *, status: int | None = None) -> Failure:
        """Not retried: asking the same again gets the same answer."""
        return Failure(ModelError(code, text, status=status), retryable=False)

    def again(self, code: ModelErrorCode, text: str, *, status: int | None = None) -> Failure:
        """Retried, after the server's ``Retry-After`` when it gave one."""
        return Failure(ModelError(code, text, status=status), retryable=True, retry_after=_retry_after(self.exc))


def _lasting(r: _Reply) -> Failure | None:
    """The key, the model, the context length or the endpoint is wrong, or the server's reply breaks
    the API: the user must change it."""
    ctx, status, code, said = r.ctx, r.status, r.code, r.said
    if isinstance(r.exc, BadReply):
        return r.fail(
            "server",
            f"{r.where} sent a reply that does not follow the {ctx.wire_api} API: {r.message}. Check base_url "
            f"(it usually ends in /v1) and wire_api in [model_providers.{ctx.provider}], or the server's version.",
        )
    if status in (401, 403) or code in ("invalid_api_key", "unauthorized", "forbidden"):
        return r.fail(
            "auth",
            f"{r.where} rejected the API key (HTTP {status or code}). Set a valid key in {ctx.key_hint}, "
            f"or check model_provider / base_url.{said}",
            status=status,
        )
    if code in ("model_not_found",) or (status in (400, 404) and _MODEL_MISSING.search(r.message)):
        return r.fail(
            "unknown_model",
            f"model {ctx.model!r} is not available at {ctx.base_url}. Pick a model the server serves "
            f"(see {ctx.base_url.rstrip('/')}/models; for Ollama run `ollama pull {ctx.model}`) and set "
            f"model = ... or -m MODEL.{said}",
            status=status,
        )
    if code == "context_length_exceeded" or _CONTEXT_WORDS.search(r.message):
        return r.fail(
            "context_length",
            f"the conversation is longer than model {ctx.model!r} accepts ({ctx.base_url}). Start a new "
            f"thread (%agent new), or lower tool_output_max_bytes, or use a model with a larger context.{said}",
            status=status,
        )
    if status == 404:
        return r.fail(
            "bad_base_url",
            f"{ctx.base_url.rstrip('/')}{ctx.endpoint} returned 404 for model {ctx.model!r}: the server has "
            f"no {ctx.wire_api} endpoint there. base_url usually ends in /v1; servers without the Responses "
            f"API need wire_api = \"chat\" in [model_providers.{ctx.provider}].{said}",
            status=status,
        )
    return None


def _passing(r: _Reply) -> Failure | None:
    """Rate limits, server errors and a stream that broke without saying why: worth retrying."""
    status, code, where, tries = r.status, r.code, r.where, r.tries
    if status == 429 or code in ("rate_limit_exceeded", "429", "rate_limit"):
        return r.again(
            "rate_limit",
            f"{where} is rate-limiting requests (HTTP 429){tries}. Wait and ask again, or raise "
            f"request_max_retries in [model_providers.{r.ctx.provider}].{r.said}",
            status=status or 429,
        )
    if (status is not None and status >= 500) or code in ("server_error", "internal_error") or code.startswith("5"):
        return r.again(
            "server",
            f"{where} failed with a server error (HTTP {status or code}){tries}. Try again later or check "
            f"the server's log.{r.said}",
            status=status,
        )
    if isinstance(r.exc, StreamFailure) and status is None and not code:
        message = f"the stream from {where} broke{tries}: {r.message}. Ask again."
        return Failure(ModelError("connection", message), retryable=True)
    return None


def _refused(r: _Reply) -> Failure:
    """Any other answer: a 4xx is the request's fault, the rest is reported as it came."""
    if r.status is not None and 400 <= r.status < 500:
        return r.fail("bad_request", f"{r.where} refused the request (HTTP {r.status}).{r.said}", status=r.status)
    return r.fail("other", f"request to {r.where} failed: {r.message}", status=r.status)


def _cause_text(exc: BaseException) -> str:
    for link in _chain(exc)[1:]:
        text = str(link)
        if text:
            return f"{type(link).__name__}: {text}"
    return str(exc) or type(exc).__name__


def _partial(error: ModelError) -> ModelError:
    """The error to raise when output was already yielded: same code, says nothing is repeated."""
    return ModelError(
        error.code,
        f"{error} The reply broke off after part of it had streamed; it was not retried so no text is "
        "repeated. Ask again to continue.",
        status=error.status,
    )


async def stream_with_retry(
    open_stream: Callable[[], AsyncGenerator[ModelEvent, None]],
    ctx: ErrorContext,
    policy: RetryPolicy,
    *,
    sleep: Callable[[float], Any] = asyncio.sleep,
) -> AsyncIterator[ModelEvent]:
    """Run ``open_stream()`` (one HTTP request), retrying per ``policy`` while nothing was yielded."""
    attempt = 0
    while True:
        yielded = False
        try:
            # aclosing: a caller that stops early (interrupt) releases the HTTP stream at once.
            async with aclosing(open_stream()) as events:
                async for event in events:
                    yielded = True
                    yield event
            return
        except ModelError:
            raise
        except (openai.OpenAIError, StreamFailure, json.JSONDecodeError) as exc:
            if isinstance(exc, json.JSONDecodeError):
                exc = StreamFailure(f"the server sent malformed stream data ({exc.msg})")
            failure = classify(exc, ctx, attempts=attempt + 1)
            if yielded:
                raise _partial(failure.error) from None
            if failure.retry_after is not None and failure.retry_after > policy.retry_after_cap:
                error = failure.error
                raise ModelError(
                    error.code, f"{error} The server asked to wait {failure.retry_after:.0f} s.", status=error.status
                ) from None
            if not failure.retryable or attempt >= policy.max_retries:
                raise failure.error from None
            await sleep(policy.delay(attempt, failure.retry_after))
            attempt += 1
