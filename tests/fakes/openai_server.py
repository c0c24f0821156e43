"""A real OpenAI-compatible HTTP server for tests: starlette + uvicorn on 127.0.0.1, in a thread.

It speaks both wire APIs with SSE streaming (``POST /v1/responses`` in the Responses event
format, ``POST /v1/chat/completions`` as chunks ending in ``data: [DONE]``), so the real
``openai`` client is exercised over real sockets. Each request consumes the next scripted
step; a step has the shape of a replay response plus failure injections:

    {"text": "...", "tool_calls": [{"name": ..., "arguments": {...} | "raw"}], "reasoning": "...",
     "usage": {"input_tokens": 3, "output_tokens": 5}}
    {"status": 500} / {"status": 429, "retry_after": 0}        error before streaming
    {"status": 401} / {"status": 404, "code": "model_not_found"} / {"status": 400, "code": "context_length_exceeded"}
    {"fail_mid_stream": true, "text": "...", "fail_after": 2}    drop the connection after 2 deltas
    {"error_mid_stream": 500 | 429, "text": "..."}               an error event after some deltas
    chat only: {"omit_ids": true}, {"single_chunk": true}, {"no_usage": true}
    any: {"delay": 0.01} seconds after each delta; {"message": "..."} for error text

Hostile or half-compatible servers (200 answers that are not a finished stream, or break the API):

    {"body": "<html>...", "content_type": "text/html"}           this body instead of a stream
    {"not_streamed": true, "text": "..."}                        one JSON reply, as if ``stream`` were false
    chat only: {"no_done": true}                                  no ``data: [DONE]`` at the end
    chat only: {"finish_reason": "length" | null}                 the last chunk's finish_reason (null: none)
    {"edit": fn}                                                  ``fn(payload)`` may change each event's JSON
                                                                  payload in place (a field of the wrong type)
    {"tool_calls": [{"name": 5, "call_id": 7, "arguments": {...}, "raw_arguments": true}]}
                                                                  name and call_id go out as given;
                                                                  ``raw_arguments`` sends an object, not a string

A request with more than ``max_tools`` tools (128, OpenAI's limit) is refused as OpenAI refuses
it (400, ``invalid_request_error``, naming ``tools`` and its length). ``context_window`` makes it
refuse over-long bodies as a real server does; ``respond`` answers
some requests (say, summary requests) from their body instead of the script.

Every request body is recorded in ``requests`` (its bytes in ``bodies``, headers in ``headers``, paths
in ``paths``).
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

_WORDS = re.compile(r"\s*\S+\s*|\s+")
_ARG_CHUNK = 8
MAX_TOOLS = 128
"""OpenAI's Chat Completions and Responses APIs refuse a request with more tools than this."""


class DropConnection(Exception):
    """Raised inside a streaming body: uvicorn then closes the socket mid-response."""


def _words(text: str) -> list[str]:
    return _WORDS.findall(text)


def _arguments(call: dict[str, Any]) -> Any:
    arguments = call.get("arguments", {})
    return arguments if isinstance(arguments, str) or call.get("raw_arguments") else json.dumps(arguments)


def _chunks(text: str) -> list[str]:
    return [text[i : i + _ARG_CHUNK] for i in range(0, len(text), _ARG_CHUNK)] or [""]


def _error_body(step: dict[str, Any], body: dict[str, Any], key: str) -> tuple[int, dict[str, Any]]:
    status = int(step["status"])
    code = step.get("code")
    model = body.get("model", "?")
    defaults: dict[int, tuple[str, str | None, str]] = {
        401: (f"Incorrect API key provided: {key}. You can find your API key in your account.", "invalid_api_key",
              "invalid_request_error"),
        403: ("You are not allowed to use this model.", "forbidden", "invalid_request_error"),
        404: (f"The model `{model}` does not exist or you do not have access to it.", "model_not_found",
              "invalid_request_error"),
        429: ("Rate limit reached for requests.", "rate_limit_exceeded", "requests"),
    }
    message, default_code, kind = defaults.get(status, ("The server had an error processing your request.", None,
                                                        "server_error"))
    if code == "context_length_exceeded":
        message = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."
        kind = "invalid_request_error"
    if status == 404 and code is None and "code" in step:
        default_code = None
    return status, {"error": {"message": step.get("message", message), "type": kind, "param": None,
                              "code": code if "code" in step else default_code}}


def too_many_tools(count: int, limit: int) -> dict[str, Any]:
    """The error body OpenAI answers a request carrying too many tools with."""
    message = (f"Invalid 'tools': array too long. Expected an array with maximum length {limit}, "
               f"but got an array with length {count} instead.")
    return {"error": {"message": message, "type": "invalid_request_error", "param": "tools",
                      "code": "array_above_max_length"}}


class FakeOpenAIServer:
    """Start with ``start()``; script with ``script(steps)``; inspect ``requests``."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.bodies: list[bytes] = []
        """Each request's body as the bytes that arrived (``requests`` holds them parsed)."""
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.reject_stream_options = False
        """Chat: answer 400 to bodies with ``stream_options`` (like some older servers)."""
        self.context_window: int | None = None
        """When set, a body of more than this many tokens (its JSON length / 4) is refused with
        ``context_length_exceeded``, as a real server refuses an over-long request."""
        self.max_tools: int | None = MAX_TOOLS
        """Most tools a request may carry (``None``: no limit, like a local server)."""
        self.models: list[dict[str, Any]] = [{"id": "fake-model", "object": "model", "owned_by": "test"}]
        """What ``GET /v1/models`` lists (a vLLM server adds ``max_model_len``)."""
        self.respond: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None
        """Answers a request from its body before the script is consulted (``None``: use the script)."""
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        app = Starlette(
            routes=[
                Route("/v1/responses", self._responses, methods=["POST"]),
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )
        self.app = app

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, steps: list[dict[str, Any]]) -> None:
        with self._lock:
            self.steps = [dict(step) for step in steps]

    def reset(self) -> None:
        with self._lock:
            self.steps = []
            self.requests.clear()
            self.bodies.clear()
            self.headers.clear()
            self.paths.clear()
            self.reject_stream_options = False
            self.context_window = None
            self.max_tools = MAX_TOOLS
            self.respond = None
            self.models = [{"id": "fake-model", "object": "model", "owned_by": "test"}]

    # -- lifecycle -----------------------------------------------------------------------

    def start(self, timeout: float = 10.0) -> FakeOpenAIServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="critical", lifespan="off", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True,
                                        name="fake-openai-server")
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"fake OpenAI server did not start within {timeout} s")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True  # do not wait for slow scripted streams to finish
        if self._thread is not None:
            self._thread.join(timeout)

    # -- request handling ----------------------------------------------------------------

    async def _record(self, request: Request) -> tuple[dict[str, Any], str]:
        raw = await request.body()
        body = json.loads(raw)
        with self._lock:
            self.requests.append(body)
            self.bodies.append(raw)
            self.headers.append(dict(request.headers))
            self.paths.append(request.url.path)
        auth = request.headers.get("authorization", "")
        return body, auth.removeprefix("Bearer ").strip()

    def _next(self) -> dict[str, Any] | None:
        with self._lock:
            return self.steps.pop(0) if self.steps else None

    def _error(self, step: dict[str, Any], body: dict[str, Any], key: str) -> Response:
        status, payload = _error_body(step, body, key)
        headers = {}
        if "retry_after" in step:
            headers["retry-after"] = str(step["retry_after"])
        return JSONResponse(payload, status_code=status, headers=headers)

    async def _models(self, request: Request) -> Response:
        return JSONResponse({"object": "list", "data": self.models})

    def _step(self, body: dict[str, Any], key: str) -> dict[str, Any] | Response:
        """The next scripted step, or the error response it (or an empty script) asks for."""
        tools = body.get("tools") or []
        if self.max_tools is not None and len(tools) > self.max_tools:
            return JSONResponse(too_many_tools(len(tools), self.max_tools), status_code=400)
        if self.context_window is not None and len(json.dumps(body)) // 4 > self.context_window:
            return self._error({"status": 400, "code": "context_length_exceeded"}, body, key)
        step = self.respond(body) if self.respond else None
        step = step if step is not None else self._next()
        if step is None:
            return JSONResponse(
                {"error": {"message": "fake server: no scripted step left", "type": "invalid_request_error",
                           "code": "script_exhausted"}},
                status_code=400,
            )
        if "status" in step and not step.get("fail_mid_stream") and "error_mid_stream" not in step:
            return self._error(step, body, key)
        return step

    async def _responses(self, request: Request) -> Response:
        body, key = await self._record(request)
        step = self._step(body, key)
        if isinstance(step, Response):
            return step
        events = responses_events(step, body)
        if (other := not_a_stream(step, events[-1][1]["response"])) is not None:
            return other
        return self._sse(step, events, chat=False)

    async def _chat(self, request: Request) -> Response:
        body, key = await self._record(request)
        if self.reject_stream_options and "stream_options" in body:
            # Rejected before a step is consumed, like a server that validates arguments first.
            return JSONResponse(
                {"error": {"message": "Unrecognized request argument supplied: stream_options",
                           "type": "invalid_request_error", "code": None}},
                status_code=400,
            )
        step = self._step(body, key)
        if isinstance(step, Response):
            return step
        if (other := not_a_stream(step, chat_completion(step, body))) is not None:
            return other
        return self._sse(step, chat_events(step, body), chat=True)

    def _sse(self, step: dict[str, Any], events: list[tuple[str | None, Any, bool]], *, chat: bool) -> StreamingResponse:
        """``events`` are (event name, data, is_delta); failures cut the list after some deltas."""
        fail = bool(step.get("fail_mid_stream")) or "error_mid_stream" in step
        fail_after = int(step.get("fail_after", 2))
        delay = float(step.get("delay", 0))
        edit: Callable[[dict[str, Any]], None] | None = step.get("edit")

        async def body() -> AsyncIterator[bytes]:
            deltas = 0
            for name, data, is_delta in events:
                if fail and deltas >= fail_after:
                    break
                if edit is not None and isinstance(data, dict):
                    edit(data)
                payload = data if isinstance(data, str) else json.dumps(data)
                prefix = f"event: {name}\n" if name else ""
                yield f"{prefix}data: {payload}\n\n".encode()
                deltas += is_delta
                if delay and is_delta:
                    await asyncio.sleep(delay)
            if not fail:
                return
            if "error_mid_stream" in step:
                name, data = mid_stream_error(step, chat=chat)
                prefix = f"event: {name}\n" if name else ""
                yield f"{prefix}data: {json.dumps(data)}\n\n".encode()
                if chat:
                    yield b"data: [DONE]\n\n"
                return
            # No wait needed: uvicorn closes the transport, which first sends every delta written.
            raise DropConnection("scripted mid-stream failure")

        return StreamingResponse(body(), media_type="text/event-stream")


def not_a_stream(step: dict[str, Any], reply: dict[str, Any]) -> Response | None:
    """The 200 answer of a step that is not a stream: its ``body``, or ``reply`` as one JSON object."""
    if "body" in step:
        return Response(step["body"], media_type=step.get("content_type", "text/html"))
    if step.get("not_streamed"):
        return JSONResponse(reply)
    return None


def mid_stream_error(step: dict[str, Any], *, chat: bool) -> tuple[str | None, dict[str, Any]]:
    """The error a server reports inside an already started stream."""
    status = int(step["error_mid_stream"])
    code = "rate_limit_exceeded" if status == 429 else "server_error"
    message = step.get("message", "Rate limit reached." if status == 429 else "The server had an error.")
    if chat:
        return None, {"error": {"message": message, "type": code, "code": code}}
    return "error", {"type": "error", "code": code, "message": message, "param": None, "sequence_number": 999}


# -- Responses API event stream -------------------------------------------------------------


def responses_events(step: dict[str, Any], body: dict[str, Any]) -> list[tuple[str | None, Any, bool]]:
    seq = iter(range(1_000_000))
    rid = f"resp_{int(time.time() * 1000)}"
    model = body.get("model", "fake-model")
    out: list[tuple[str | None, Any, bool]] = []
    output: list[dict[str, Any]] = []

    def emit(kind: str, is_delta: bool = False, **fields: Any) -> None:
        out.append((kind, {"type": kind, "sequence_number": next(seq), **fields}, is_delta))

    def response(status: str, usage: Any = None) -> dict[str, Any]:
        return {"id": rid, "object": "response", "created_at": int(time.time()), "status": status, "model": model,
                "output": list(output), "usage": usage, "parallel_tool_calls": body.get("parallel_tool_calls", True),
                "tool_choice": body.get("tool_choice", "auto"), "tools": body.get("tools", []), "error": None,
                "incomplete_details": None, "instructions": body.get("instructions"), "metadata": {},
                "temperature": 1.0, "top_p": 1.0, "text": {"format": {"type": "text"}}}

    emit("response.created", response=response("in_progress"))
    emit("response.in_progress", response=response("in_progress"))
    index = 0
    if reasoning := step.get("reasoning"):
        item_id = f"rs_{index}"
        item = {"id": item_id, "type": "reasoning", "summary": [], "encrypted_content": None}
        emit("response.output_item.added", output_index=index, item=item)
        part = {"type": "summary_text", "text": ""}
        emit("response.reasoning_summary_part.added", item_id=item_id, output_index=index, summary_index=0, part=part)
        for word in _words(reasoning):
            emit("response.reasoning_summary_text.delta", True, item_id=item_id, output_index=index, summary_index=0,
                 delta=word)
        emit("response.reasoning_summary_text.done", item_id=item_id, output_index=index, summary_index=0,
             text=reasoning)
        emit("response.reasoning_summary_part.done", item_id=item_id, output_index=index, summary_index=0,
             part={"type": "summary_text", "text": reasoning})
        done = {**item, "summary": [{"type": "summary_text", "text": reasoning}], "encrypted_content": "enc-" + item_id}
        emit("response.output_item.done", output_index=index, item=done)
        output.append(done)
        index += 1
    if text := step.get("text"):
        item_id = f"msg_{index}"
        item = {"id": item_id, "type": "message", "role": "assistant", "status": "in_progress", "content": []}
        emit("response.output_item.added", output_index=index, item=item)
        emit("response.content_part.added", item_id=item_id, output_index=index, content_index=0,
             part={"type": "output_text", "text": "", "annotations": []})
        for word in _words(text):
            emit("response.output_text.delta", True, item_id=item_id, output_index=index, content_index=0,
                 delta=word, logprobs=[])
        emit("response.output_text.done", item_id=item_id, output_index=index, content_index=0, text=text, logprobs=[])
        part = {"type": "output_text", "text": text, "annotations": []}
        emit("response.content_part.done", item_id=item_id, output_index=index, content_index=0, part=part)
        done = {**item, "status": "completed", "content": [part]}
        emit("response.output_item.done", output_index=index, item=done)
        output.append(done)
        index += 1
    for n, call in enumerate(step.get("tool_calls", [])):
        item_id = f"fc_{index}"
        call_id = call.get("call_id", f"call_fake_{n}")
        arguments = _arguments(call)
        item = {"id": item_id, "type": "function_call", "status": "in_progress", "call_id": call_id,
                "name": call["name"], "arguments": ""}
        emit("response.output_item.added", output_index=index, item=item)
        for chunk in _chunks(arguments) if isinstance(arguments, str) else []:
            emit("response.function_call_arguments.delta", True, item_id=item_id, output_index=index, delta=chunk)
        emit("response.function_call_arguments.done", item_id=item_id, output_index=index, arguments=arguments,
             name=call["name"])
        done = {**item, "status": "completed", "arguments": arguments}
        emit("response.output_item.done", output_index=index, item=done)
        output.append(done)
        index += 1
    usage = step.get("usage", {})
    emit("response.completed", response=response("completed", {
        "input_tokens": usage.get("input_tokens", 11),
        "input_tokens_details": {"cached_tokens": usage.get("cached_input_tokens", 0)},
        "output_tokens": usage.get("output_tokens", 7),
        "output_tokens_details": {"reasoning_tokens": usage.get("reasoning_tokens", 0)},
        "total_tokens": usage.get("input_tokens", 11) + usage.get("output_tokens", 7),
    }))
    return out


# -- Chat Completions chunk stream ----------------------------------------------------------


def chat_events(step: dict[str, Any], body: dict[str, Any]) -> list[tuple[str | None, Any, bool]]:
    cid = f"chatcmpl-{int(time.time() * 1000)}"
    model = body.get("model", "fake-model")
    created = int(time.time())
    out: list[tuple[str | None, Any, bool]] = []

    def chunk(delta: dict[str, Any] | None, finish: str | None = None, is_delta: bool = False, **extra: Any) -> None:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
        data = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model, "choices": choices,
                **extra}
        out.append((None, data, is_delta))

    chunk({"role": "assistant", "content": ""})
    if reasoning := step.get("reasoning"):
        for word in _words(reasoning):
            chunk({"reasoning_content": word}, is_delta=True)
    for word in _words(step.get("text", "")):
        chunk({"content": word}, is_delta=True)
    for n, call in enumerate(step.get("tool_calls", [])):
        call_id = None if step.get("omit_ids") else call.get("call_id", f"call_fake_{n}")
        arguments = _arguments(call)
        head: dict[str, Any] = {"index": n, "type": "function", "function": {"name": call["name"], "arguments": ""}}
        if call_id:
            head["id"] = call_id
        if step.get("single_chunk") or not isinstance(arguments, str):
            head["function"]["arguments"] = arguments
            chunk({"tool_calls": [head]}, is_delta=True)
            continue
        chunk({"tool_calls": [head]})
        for piece in _chunks(arguments):
            chunk({"tool_calls": [{"index": n, "function": {"arguments": piece}}]}, is_delta=True)
    chunk({}, step.get("finish_reason", "tool_calls" if step.get("tool_calls") else "stop"))
    wants_usage = (body.get("stream_options") or {}).get("include_usage")
    if wants_usage and not step.get("no_usage"):
        usage = step.get("usage", {})
        prompt, completion = usage.get("input_tokens", 11), usage.get("output_tokens", 7)
        chunk(None, usage={"prompt_tokens": prompt, "completion_tokens": completion,
                           "total_tokens": prompt + completion,
                           "prompt_tokens_details": {"cached_tokens": usage.get("cached_input_tokens", 0)}})
    if not step.get("no_done"):
        out.append((None, "[DONE]", False))
    return out


def chat_completion(step: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The step as one non-streamed ``chat.completion`` object."""
    calls = [{"id": call.get("call_id", f"call_fake_{n}"), "type": "function",
              "function": {"name": call["name"], "arguments": _arguments(call)}}
             for n, call in enumerate(step.get("tool_calls", []))]
    message: dict[str, Any] = {"role": "assistant", "content": step.get("text", "")}
    if calls:
        message["tool_calls"] = calls
    return {"id": f"chatcmpl-{int(time.time() * 1000)}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "fake-model"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}}
