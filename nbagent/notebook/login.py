"""A server's sign-in link in the notebook: shown for the person to open, never opened by the
kernel or the page; it turns into "signed in" when the login completes."""

from __future__ import annotations

import ipywidgets as W

from nbagent.notebook.html import COLORS, esc, link
from nbagent.protocol import McpLoginCompleted, McpLoginRequired


class LoginLinks:
    """One line per server waiting for a sign-in; ``widget`` holds them all."""

    def __init__(self) -> None:
        self.widget = W.VBox([])
        self.lines: dict[str, W.HTML] = {}

    def handle(self, msg: McpLoginRequired | McpLoginCompleted) -> None:
        line = self.lines.get(msg.server)
        if line is None:
            line = self.lines[msg.server] = W.HTML()
            self.widget.children = (*self.widget.children, line)
        if isinstance(msg, McpLoginRequired):
            line.value = (
                f"<div style='color:{COLORS['info']};overflow-wrap:anywhere'>🔑 MCP server <b>{esc(msg.server)}</b> "
                f"asks you to sign in; open this link yourself: {link(msg.url)}</div>"
            )
        else:
            line.value = f"<div style='color:{COLORS['ok']}'>✓ signed in to MCP server <b>{esc(msg.server)}</b></div>"
