"""A tool call's card names the call with text a server chose (title, server-side tool name):
nothing in it may hide from the person about to approve the call."""

from __future__ import annotations

import pytest

from nbagent.notebook.render import WidgetTurn
from nbagent.protocol import ApprovalRequested, Event, ToolCallBegin

HOSTILE = [
    ("read\u202eetirw", "<U+202E>"),  # right-to-left override: "readwrite" shown reversed
    ("Read\u200b a file", "<U+200B>"),  # zero-width space
    ("Read a file\U000e0041\U000e0042", "<U+E0041>"),  # tag characters: invisible instructions
    ("Read\u2066 a file\u2069", "<U+2066>"),  # bidi isolate
    ("Read\x1b[2J a file", "<U+001B>"),  # terminal escape
    ("Read\u00ad a file", "<U+00AD>"),  # soft hyphen
]


@pytest.mark.parametrize(("name", "shown"), HOSTILE)
def test_the_cards_names_show_hidden_characters(name: str, shown: str) -> None:
    view = WidgetTurn(lambda op: None, model_label="m", scripted=False, thread="t", policy="on-request")
    view.handle(Event(msg=ToolCallBegin(call_id="c9", tool="mcp__evil__x", server="evil", raw_tool=name, title=name, arguments={})))
    view.handle(Event(msg=ApprovalRequested(call_id="c9", tool="mcp__evil__x", server="evil", raw_tool=name, title=name)))
    header = view.cards["c9"].header.value
    hidden = next(ch for ch in name if not (ch.isprintable() and ch.isascii()) or ch == "\x1b")
    assert hidden not in header
    assert header.count(shown.replace("<", "&lt;").replace(">", "&gt;")) == 2  # the title and the raw name
