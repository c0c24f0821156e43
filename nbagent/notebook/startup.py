"""MCP server startup status, shown when the extension loads and by ``%agent``."""

from __future__ import annotations

import ipywidgets as W

from nbagent.mcp.status import ServerStatus
from nbagent.notebook.html import COLORS, badge, esc, pre
from nbagent.notebook.login import LoginLinks
from nbagent.protocol import (
    Event,
    McpLoginCompleted,
    McpLoginRequired,
    McpStartupComplete,
    McpStartupUpdate,
    WarningEvent,
)
from nbagent.textsafe import describe_for_display

STATUS_COLOR = {"starting": "info", "ready": "ok", "failed": "error", "cancelled": "warn", "stopped": "muted"}


def status_line(status: ServerStatus) -> str:
    """``ready (3 tools)``, ``failed: why``: one server's state as ``%agent`` prints it."""
    if status.state == "disabled" and status.error:
        return status.error  # "disabled by requirements (FILE)"
    tools = f" ({status.tools} tools)" if status.state == "ready" else ""
    error = f": {status.error}" if status.error else ""
    return f"{status.state}{tools}{error}"


class StartupView:
    def __init__(self, servers: list[str], problem: str | None = None) -> None:
        self.updates: dict[str, McpStartupUpdate] = {}
        self.servers = list(servers)
        self.problem = problem
        """Why no session can open (a config file that cannot be read), shown instead of the servers."""
        self.status = W.HTML()
        self.warnings = W.HTML()
        self.logins = LoginLinks()
        self.widget = W.VBox([self.status, self.warnings, self.logins.widget])
        self.complete = not servers
        self._render()

    def handle(self, event: Event) -> None:
        msg = event.msg
        if isinstance(msg, McpStartupUpdate):
            self.updates[msg.server] = msg
            if msg.server not in self.servers:
                self.servers.append(msg.server)
            self._render()
        elif isinstance(msg, McpStartupComplete):
            self.complete = True
            self._render()
        elif isinstance(msg, (McpLoginRequired, McpLoginCompleted)):
            self.logins.handle(msg)
        elif isinstance(msg, WarningEvent):  # the session's own, e.g. a config file it did not read
            line = f"<div style='color:{COLORS['warn']}'>⚠ {esc(describe_for_display(msg.message))}</div>"
            self.warnings.value += line

    def _render(self) -> None:
        if self.problem:
            self.status.value = f"<div style='color:{COLORS['error']}'>{esc(describe_for_display(self.problem))}</div>"
            return
        if not self.servers:
            self.status.value = badge("no MCP servers configured", "muted")
            return
        parts = []
        for name in self.servers:
            update = self.updates.get(name)
            status = update.status if update else "starting"
            tools = f" · {update.tools} tools" if update and update.status == "ready" else ""
            parts.append(badge(f"{name}: {status}{tools}", STATUS_COLOR.get(status, "muted")))
            if update and update.status == "failed":
                parts.append(
                    f"<div style='color:{COLORS['error']}'>{esc(describe_for_display(update.error or 'failed'))}</div>"
                    + (pre(update.stderr_tail) if update.stderr_tail else "")
                )
        self.status.value = "<b>MCP</b> " + "".join(parts)
