"""``McpServers``: what a front end may do with a session's MCP servers (list, add, restart,
remove, wait for startup, read what they offer besides tools). Routing calls, instructions and shutdown stay with the session, so a
front end can change which servers run but never reach a connection."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from nbagent.config import McpServerConfig
from nbagent.mcp import offers
from nbagent.mcp.manager import McpConnectionManager, check_server_name
from nbagent.mcp.status import ServerStatus
from nbagent.mcp.wire import WireMessage

ConfigHook = Callable[[str, McpServerConfig | None], None]
"""Told of a server added (its config) or removed (``None``) before it starts or after it stops."""


class McpServers:
    def __init__(self, manager: McpConnectionManager, on_config: ConfigHook | None = None) -> None:
        self._manager = manager
        self._on_config = on_config
        self._start: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start every configured server in the background; turns wait for it (``ready``)."""
        self._start = asyncio.ensure_future(self._manager.start())

    async def ready(self) -> None:
        """Wait for startup, which each server's own startup timeout bounds."""
        if self._start is not None:
            await asyncio.shield(self._start)

    async def aclose(self) -> None:
        if self._start is not None and not self._start.done():
            self._start.cancel()
        await self._manager.aclose()

    def names(self) -> list[str]:
        """Configured servers, in configuration order."""
        return list(self._manager.servers)

    def status(self) -> dict[str, ServerStatus]:
        return self._manager.status()

    def wire(self, name: str, last: int | None = None) -> list[WireMessage]:
        """The last JSON-RPC messages to and from ``name``, secrets redacted (``inspect wire``)."""
        return self._manager.wire(name, last)

    async def add(self, name: str, cfg: McpServerConfig) -> bool:
        """Add (or replace) a server and start it; ``True`` when it is ready. The session knows
        its config before its process starts: what the server sends back is redacted from the
        first message on."""
        check_server_name(name)  # a name the manager refuses never enters the session's config
        if self._on_config is not None:
            self._on_config(name, cfg)
        return await self._manager.add(name, cfg)

    async def restart(self, name: str) -> bool:
        """Stop one server and start it again; ``True`` when it is ready."""
        return await self._manager.restart(name)

    async def remove(self, name: str) -> None:
        """Stop a server and forget it; its tools leave the catalogue at once."""
        await self._manager.remove(name)
        if self._on_config is not None:
            self._on_config(name, None)

    async def resources(self, args: list[str]) -> str:
        """``[SERVER [URI]]``: the resources servers offer, or one read (``nbagent.mcp.offers``)."""
        return await offers.resources(self._manager, args)

    async def prompts(self, args: list[str]) -> str:
        """``[SERVER [NAME [KEY=VALUE]...]]``: the prompts servers offer, or one filled in."""
        return await offers.prompts(self._manager, args)
