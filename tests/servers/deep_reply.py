"""A raw stdio MCP server (no SDK) whose ``deep`` tool answers with ``structuredContent``
nested ``DEEP_REPLY_DEPTH`` levels (default 300): valid JSON, but deeper than the JSON-RPC
parser reads. A client that drops such a line would leave the call waiting until its timeout.
``plain`` answers normally, to show the connection still works after a reply it could not read.
"""

import json
import os
import sys

DEPTH = int(os.environ.get("DEEP_REPLY_DEPTH", "300"))
TOOLS = [
    {"name": "deep", "description": "Answer too deep to read.", "inputSchema": {"type": "object"}},
    {"name": "plain", "description": "Answer 'plain ok'.", "inputSchema": {"type": "object"}},
]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def nested(depth: int) -> object:
    value: object = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


def result(message: dict) -> dict:
    method = message.get("method")
    if method == "initialize":
        return {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "deep_reply", "version": "1"}}  # fmt: skip
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call" and message["params"]["name"] == "deep":
        return {"content": [{"type": "text", "text": "deep"}], "structuredContent": nested(DEPTH)}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": "plain ok"}]}
    return {}


for line in sys.stdin:
    message = json.loads(line)
    if message.get("id") is not None and "method" in message:
        send({"jsonrpc": "2.0", "id": message["id"], "result": result(message)})
