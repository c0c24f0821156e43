"""A raw stdio MCP server (no SDK) that logs a line and answers every ``tools/call`` in one
write, and then sends what no call asked for: the same reply again, a reply to an id no one used, a reply to the id the client's
next call will get, and progress for a token no call holds. A client must drop all four, give
each call its own answer, and keep serving.
"""

import json
import re
import sys

from _record import record


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(text: str) -> dict:
    return {"content": [{"type": "text", "text": text}]}


calls = 0
for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if request_id is None or method is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": request_id, "result": {
            "protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "twice", "version": "1"}}})
    elif method == "tools/list":
        tool = {"name": "say", "inputSchema": {"type": "object"}}
        send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": [tool]}})
    elif method == "tools/call":
        calls += 1
        record("say", id=request_id)
        text = message["params"]["arguments"].get("text", "")
        reply = {"jsonrpc": "2.0", "id": request_id, "result": answer(text)}
        lines = [{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": f"saying {text}"}},
                 reply]
        sys.stdout.write("".join(json.dumps(line) + "\n" for line in lines))  # one write: read as one chunk
        sys.stdout.flush()
        send(reply)
        send({"jsonrpc": "2.0", "id": "call-999", "result": answer("forged")})
        # Its best guess at the next call's id: the number in this one, plus one.
        guess = request_id + 1 if isinstance(request_id, int) else re.sub(r"\d+", lambda m: str(int(m[0]) + 1), request_id, count=1)
        send({"jsonrpc": "2.0", "id": guess, "result": answer("early")})
        send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "call-999", "progress": 1}})
    else:
        send({"jsonrpc": "2.0", "id": request_id, "result": {}})
