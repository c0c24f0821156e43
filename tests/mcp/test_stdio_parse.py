"""A line from a stdio server reads as the same message, or fails with the same answer, whether or
not it takes the quick way that plain result replies take."""

from __future__ import annotations

import json

import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from nbagent.mcp.stdio import _parse

REPLY = {"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "hi"}], "isError": False}}
LINES = [
    json.dumps(REPLY).encode(),
    json.dumps({**REPLY, "id": "a-1"}).encode(),
    b'{"jsonrpc":"2.0","id":1,"result":{"x":NaN,"y":123456789012345678901234567890,"z":-0.0}}',
    b'{"jsonrpc":"2.0","id":1,"result":{"x":1,"x":2}}',  # a repeated key: the last one, as before
    b'  {"jsonrpc":"2.0","id":1,"result":{}}  ',
    b'{"jsonrpc":"2.0","id":true,"result":{}}',  # not an id
    b'{"jsonrpc":"2.0","id":1.0,"result":{}}',
    b'{"jsonrpc":"1.0","id":1,"result":{}}',
    b'{"jsonrpc":"2.0","id":1,"result":"text"}',
    b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}',
    b'{"jsonrpc":"2.0","id":1,"result":{"x":"\\ud800"}}',
    b'{"jsonrpc":"2.0","id":1,"result":{"x":"\xff"}}',
    b'{"jsonrpc":"2.0","id":1,"result":{}} trailing',
    b'{"jsonrpc":"2.0","id":3,"method":"ping"}',
    b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}',
    b'{"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"no"}}',
    b'{"jsonrpc":"2.0","id":5,"result":' + b"[" * 3000 + b"]" * 3000 + b"}",
]


def _union(line: bytes) -> SessionMessage | str:
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError:
        return "fails"


@pytest.mark.parametrize("line", LINES)
def test_a_line_reads_as_the_message_union_reads_it(line: bytes) -> None:
    parsed = _parse(line)
    expected = _union(line)
    if expected == "fails":  # an answer saying why (a reply) or the error itself, never a message
        assert isinstance(parsed, Exception) or isinstance(parsed.message, types.JSONRPCError), parsed
    else:
        assert isinstance(parsed, SessionMessage)
        assert repr(parsed.message) == repr(expected.message)  # repr: NaN is not equal to itself
