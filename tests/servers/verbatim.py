"""A raw stdio MCP server (no SDK) that lists its tools exactly as the JSON it is given: what no
SDK would let a server send (two tools of one name, ``"false"`` as a hint) goes out as written.

``VERBATIM_TOOLS`` is a JSON list of listings, each a list of tool objects; ``$VAR`` in it (and in
``VERBATIM_INSTRUCTIONS``) is replaced by that variable of the server's own environment, the way a
server puts its configuration in what it says. Every ``tools/call`` is recorded (``RECORD_FILE``)
with the listing it ran under; then the next listing, if there is one, takes over and the server
sends ``notifications/tools/list_changed``.
"""

import json
import os
import sys
from string import Template

from _record import record


def _own(text: str) -> str:
    return Template(text).safe_substitute(os.environ)


LISTINGS: list[list[dict]] = json.loads(_own(os.environ.get("VERBATIM_TOOLS", "[[]]")))
INSTRUCTIONS = _own(os.environ.get("VERBATIM_INSTRUCTIONS", ""))
listing = 0


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(message: dict) -> dict:
    global listing
    method = message.get("method")
    if method == "initialize":
        answer = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {"listChanged": True}},
                  "serverInfo": {"name": "verbatim", "version": "1"}}  # fmt: skip
        return {**answer, "instructions": INSTRUCTIONS} if INSTRUCTIONS else answer
    if method == "tools/list":
        return {"tools": LISTINGS[listing]}
    if method == "tools/call":
        name = message["params"]["name"]
        record(name, listing=listing, arguments=message["params"].get("arguments"))
        if listing + 1 < len(LISTINGS):
            listing += 1
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        return {"content": [{"type": "text", "text": f"{name} ran"}]}
    return {}


for line in sys.stdin:
    message = json.loads(line)
    if message.get("id") is not None and "method" in message:
        send({"jsonrpc": "2.0", "id": message["id"], "result": result(message)})
