"""What ``McpConnectionManager.status()`` reports per server (for ``%agent mcp`` and the CLI)."""

from __future__ import annotations

from typing import Literal

from nbagent.protocol import ProtocolModel


class ServerStatus(ProtocolModel):
    name: str
    state: Literal["starting", "ready", "failed", "stopped", "disabled"]
    transport: str
    protocol_version: str | None = None
    tools: int = 0
    """Enabled tools the server offers (0 unless ready)."""
    error: str | None = None
    stderr_tail: str | None = None
    pid: int | None = None
    log_path: str | None = None
    required: bool = False
