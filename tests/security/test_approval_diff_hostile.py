"""A diff shown before an approval is made of a model's patch and a file's or cell's content:
none of it may become markup in the panel (no tag, no attribute, no script) or a control a
terminal obeys; the fold is plain ``<details>``, and nothing hides what the change does."""

from __future__ import annotations

import re
from html import escape as html_escape
from pathlib import Path

from nbagent.kit.diffview import changes_text
from nbagent.notebook.approval import ApprovalPanel
from nbagent.protocol import ApprovalRequested
from nbagent.protocol.bridge import CellInfo
from nbagent.server.asks import approval_message
from nbagent.tools.cell_diff import replaced
from nbagent.tools.patch import PatchTools

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    "</pre></div><iframe src=javascript:alert(3)>",
    "' style='position:fixed;inset:0' x='",
    "\x1b]52;c;c2VjcmV0\x07\x1b[2J\x1b[31mred",
    "safe\u202etxt.exe\u200b",
]
_TAG = re.compile(r"<\s*/?\s*([a-zA-Z]+)")
_ALLOWED = {"div", "details", "summary", "span", "code", "b"}


async def test_a_hostile_file_cell_and_path_are_inert_in_the_panel_the_terminal_and_an_mcp_caller(tmp_path: Path) -> None:
    body = "\n".join(HOSTILE) + "\n"
    name = "x<b>'\"&.txt"
    (tmp_path / name).write_text(body)
    tools = PatchTools(tmp_path)
    [spec] = tools.list_tools()
    patch = "*** Begin Patch\n*** Update File: " + name + "\n@@\n-" + HOSTILE[0] + "\n+" + HOSTILE[1] + "\n*** End Patch"
    changes = await tools.preview(spec, {"input": patch})
    cell = CellInfo(id="c<i>", index=0, cell_type="code", source=body, outputs=[])
    changes.append(replaced(cell, body + "\n".join(HOSTILE[::-1])))
    event = ApprovalRequested(call_id="c", tool="apply_patch", arguments={"input": patch}, changes=changes)
    html = ApprovalPanel(event, lambda op: None).diff.value
    assert {t.lower() for t in _TAG.findall(html)} <= _ALLOWED, _TAG.findall(html)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;img src=x onerror=alert(2)&gt;" in html
    assert "x&lt;b&gt;&#x27;&quot;&amp;.txt" in html  # the path, escaped, attribute quotes too
    shown = ["<U+001B>]52;c;c2VjcmV0<U+0007>", "safe<U+202E>txt.exe<U+200B>"]
    for text, marks in ((html, [html_escape(m) for m in shown]), (changes_text(changes), shown), (approval_message(event), shown)):
        assert not any(ch in text for ch in "\x1b\x07\u202e\u200b")
        assert all(mark in text for mark in marks)
