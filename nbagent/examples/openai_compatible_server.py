"""A tiny **scripted** OpenAI-compatible HTTP server: ``POST /v1/chat/completions`` (streamed as
Chat Completions chunks, as Ollama, vLLM and llama.cpp stream them) and ``GET /v1/models``.

It is not a model. Each request gets the next reply of a script given in Python (the shape of a
replay response: ``text``, ``tool_calls``, ``usage``), so a walkthrough can show nbagent talking to
a local model server over real HTTP, through the real ``openai`` client, without a GPU or a cloud.
A reply without ``usage`` reports what a real model would have counted (``scripted_usage``), in
the last chunk, when the request asks for it (``stream_options.include_usage``), as OpenAI does.
Like every server nbagent starts, it binds 127.0.0.1 and refuses a request without its bearer
token. Every request body it accepted is kept in ``requests``: what the model was sent.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from nbagent.models.scripted_usage import ScriptedMeter, sent_chars

MODEL = "scripted-local-model"
MAX_BODY = 16 * 1024 * 1024
"""Request bodies past this are refused unread (a long thread's request stays far below)."""
_WORDS = re.compile(r"\s*\S+\s*|\s+")


class ScriptedChatServer:
    """``with ScriptedChatServer(replies) as server:`` serves at ``server.base_url`` until the block ends."""

    def __init__(self, replies: list[dict[str, Any]], *, token: str | None = None) -> None:
        self.replies = list(replies)
        self.token = token or secrets.token_urlsafe(24)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._meter = ScriptedMeter()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        # A short poll: ``stop`` waits for the serving loop to look, and tests stop many servers.
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), daemon=True,
                                        name="scripted-chat-server")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def start(self) -> ScriptedChatServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(5)

    def __enter__(self) -> ScriptedChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def next_reply(self, body: dict[str, Any]) -> dict[str, Any] | None:
        with self._lock:
            self.requests.append(body)
            if not self.replies:
                return None
            reply = self.replies.pop(0)
            if "usage" not in reply:
                said = reply.get("text", "") + "".join(c["name"] + _arguments(c) for c in reply.get("tool_calls", []))
                reply = {**reply, "usage": self._meter.usage(_sent(body), said)}
            return reply


def _sent(body: dict[str, Any]) -> int:
    messages, tools = body.get("messages"), body.get("tools")
    texts = [json.dumps(m.get("content"), default=str) + json.dumps(m.get("tool_calls") or "", default=str)
             for m in (messages if isinstance(messages, list) else []) if isinstance(m, dict)]
    return sent_chars(None, texts, tools if isinstance(tools, list) else [])


def _arguments(call: dict[str, Any]) -> str:
    arguments = call.get("arguments", {})
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def chunks(reply: dict[str, Any], model: str, *, include_usage: bool = True) -> list[dict[str, Any]]:
    """One reply as the Chat Completions chunks a local server streams: the text word by word,
    each tool call whole, then the finish reason, then (when asked for) the usage."""
    made = int(time.time())
    base = {"id": f"chatcmpl-{secrets.token_hex(6)}", "object": "chat.completion.chunk", "created": made, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": word}) for word in _WORDS.findall(reply.get("text", ""))]
    calls = reply.get("tool_calls", [])
    for n, call in enumerate(calls):
        function = {"name": call["name"], "arguments": _arguments(call)}
        out.append(chunk({"tool_calls": [{"index": n, "id": f"call_{secrets.token_hex(6)}", "type": "function",
                                          "function": function}]}))  # fmt: skip
    out.append(chunk({}, "tool_calls" if calls else "stop"))
    if include_usage:
        out.append({**base, "choices": [], "usage": _wire_usage(reply.get("usage", {}))})
    return out


def _wire_usage(usage: dict[str, int]) -> dict[str, Any]:
    """Codex's counts as Chat Completions names them."""
    prompt, completion = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": usage.get("total_tokens", prompt + completion),
            "prompt_tokens_details": {"cached_tokens": usage.get("cached_input_tokens", 0)},
            "completion_tokens_details": {"reasoning_tokens": usage.get("reasoning_output_tokens", 0)}}


def _handler(server: ScriptedChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet: requests are kept, not logged
            return None

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _admitted(self, route: str) -> bool:
            """The bearer token, then the route; anything else is answered here."""
            if not secrets.compare_digest(self.headers.get("Authorization", ""), f"Bearer {server.token}"):
                self._json(401, {"error": {"message": "missing or wrong bearer token", "type": "invalid_request_error",
                                           "code": "invalid_api_key"}})  # fmt: skip
                return False
            if self.path.rstrip("/") != route:
                self._json(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                return False
            return True

        def do_GET(self) -> None:
            if self._admitted("/v1/models"):
                self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "script"}]})

        def do_POST(self) -> None:
            if not self._admitted("/v1/chat/completions"):
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
                if not 0 <= length <= MAX_BODY:
                    raise ValueError
                body = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(body, dict):
                    raise ValueError
            except ValueError:
                self._json(400, {"error": {"message": f"the body must be a JSON object of at most {MAX_BODY} bytes",
                                           "type": "invalid_request_error"}})  # fmt: skip
                return
            reply = server.next_reply(body)
            if reply is None:
                self._json(400, {"error": {"message": "the script has no reply left", "type": "invalid_request_error"}})
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            options = body.get("stream_options")
            wanted = isinstance(options, dict) and options.get("include_usage") is True
            for part in chunks(reply, body.get("model", MODEL), include_usage=wanted):
                self.wfile.write(f"data: {json.dumps(part)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler
