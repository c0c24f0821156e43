"""A server's sign-in link in the notebook: shown for the person to open, never opened by the
kernel or the page; it turns into "signed in" when the login completes."""

from __future__ import annotations

import ipywidgets as W

from nbagent.kit.turn import Login
from nbagent.notebook.html import COLORS, esc, link
from nbagent.protocol import McpLoginCompleted, McpLoginRequired


class LoginLinks:
    """One line per server waiting for a sign-in; ``widget`` holds them all."""

    def __init__(self) -> None:
        self.widget = W.VBox([])
        self.lines: dict[str, W.HTML] = {}

    def handle(self, msg: McpLoginRequired | McpLoginCompleted) -> None:
        url = msg.url if isinstance(msg, McpLoginRequired) else None
        self.show(Login(msg.server, url, done=isinstance(msg, McpLoginCompleted)))

    def show(self, login: Login) -> None:
        line = self.lines.get(login.server)
        if line is None:
            line = self.lines[login.server] = W.HTML()
            self.widget.children = (*self.widget.children, line)
        if not login.done:
            line.value = (
                f"<div style='color:{COLORS['info']};overflow-wrap:anywhere'>🔑 MCP server <b>{esc(login.server)}</b> "
                f"asks you to sign in; open this link yourself: {link(login.url or '')}</div>"
            )
        else:
            line.value = f"<div style='color:{COLORS['ok']}'>✓ signed in to MCP server <b>{esc(login.server)}</b></div>"
