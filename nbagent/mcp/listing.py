"""A server's ``tools/list`` read as MCP types it, where the SDK reads more into it (DESIGN §3).

- **Hints count only as JSON booleans.** The SDK's models read ``"false"`` as ``False`` and
  ``"true"`` (or ``1``) as ``True``, so a server could spell ``readOnlyHint`` as a string and be
  taken at its word. ``ToolHints`` sits between the transport and the SDK and drops every hint of
  a listed tool that is not a boolean, before the SDK parses it: the hint is then absent, which
  MCP defines as the cautious reading (not read-only, destructive, open world).
- **One tool per name.** A listing that names a tool twice keeps the first (``first_of_each``):
  the catalogue, the output schema a result is checked against and every count then agree on
  which definition the name means.
- **Every page, bounded** (``paginate``): a cursor that never ends or repeats cannot hang startup.
- **Kept current** (``ToolList``): a ``tools/list_changed`` starts a re-list, and a call made
  meanwhile waits for it rather than finding the tools as they were.

Each says what it left out in a warning naming the server and the tool.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Any

import anyio
import mcp_types as types
from mcp import Client

from nbagent.mcp.errors import McpUnavailable
from nbagent.mcp.validation import OutputCheck
from nbagent.mcp.wire import watched

log = logging.getLogger(__name__)

MAX_TOOL_PAGES = 100
"""A server whose ``tools/list`` cursor never ends cannot hang startup."""

HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
"""The boolean hints of ``ToolAnnotations``, as the wire spells them."""


class ToolHints:
    """Drops the hints of listed tools that are not JSON booleans, as the answers arrive."""

    def __init__(self, server: str, warn: Callable[[str], None]) -> None:
        self._server = server
        self._warn = warn
        self._lists: set[str | int] = set()
        """Ids of ``tools/list`` requests sent and not answered yet."""
        self._warned: set[str] = set()
        """Each message once per connection, however often the server is listed again."""

    def wrap(self, transport: AbstractAsyncContextManager[Any]) -> AbstractAsyncContextManager[Any]:
        return watched(transport, received=self._received, sent=self._sent)

    def _sent(self, item: Any) -> Any:
        message = getattr(item, "message", None)
        if isinstance(message, types.JSONRPCRequest) and message.method == "tools/list":
            self._lists.add(message.id)
        return item

    def _received(self, item: Any) -> Any:
        message = getattr(item, "message", None)
        if not isinstance(message, types.JSONRPCResponse) or message.id not in self._lists:
            return item
        self._lists.discard(message.id)
        tools = message.result.get("tools")
        if not isinstance(tools, list):
            return item
        checked = [self._checked(tool) for tool in tools]
        if all(new is old for new, old in zip(checked, tools, strict=True)):
            return item
        # A new message: the wire tap keeps the one that arrived, as it arrived.
        return replace(item, message=message.model_copy(update={"result": {**message.result, "tools": checked}}))

    def _checked(self, tool: Any) -> Any:
        """``tool`` itself, or a copy without its hints that are not booleans."""
        annotations = tool.get("annotations") if isinstance(tool, dict) else None
        if not isinstance(annotations, dict):
            return tool
        wrong = {hint: annotations[hint] for hint in HINTS
                 if hint in annotations and not isinstance(annotations[hint], bool)}
        if not wrong:
            return tool
        for hint, value in wrong.items():
            text = (
                f"MCP server {self._server!r}: tool {tool.get('name')!r} sends {hint} as "
                f"{json.dumps(value, ensure_ascii=False, default=str)[:40]}, not a boolean; read as absent"
            )
            if text not in self._warned:
                self._warned.add(text)
                self._warn(text)
        return {**tool, "annotations": {k: v for k, v in annotations.items() if k not in wrong}}


def first_of_each(server: str, tools: list[types.Tool], warn: Callable[[str], None]) -> list[types.Tool]:
    """``tools`` with only the first of each name, warning of every other."""
    seen: set[str] = set()
    kept: list[types.Tool] = []
    for tool in tools:
        if tool.name in seen:
            warn(f"MCP server {server!r} lists tool {tool.name!r} more than once; "
                 "the first is kept, the others left out")
        else:
            seen.add(tool.name)
            kept.append(tool)
    return kept


async def paginate(
    server: str, method: str, fetch: Callable[[str | None], Awaitable[Any]], field: str, warn: Callable[[str], None]
) -> list[Any]:
    """Every page of a ``*/list`` method, bounded: a server whose cursor never ends or repeats
    yields what it sent so far, with a warning."""
    items: list[Any] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(MAX_TOOL_PAGES):
        page = await fetch(cursor)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            return items
        if cursor in seen:
            break
        seen.add(cursor)
    warn(f"MCP server {server!r}: {method} did not end; kept {len(items)} {field}")
    return items


class ToolList:
    """One connection's ``tools/list``: listed to the end, re-listed after a change, and
    awaited by calls while a re-list is under way. ``on_listed`` takes each re-listed set."""

    def __init__(self, server: str, timeout: float, warn: Callable[[str], None],
                 on_listed: Callable[[list[types.Tool]], None]) -> None:  # fmt: skip
        self._server = server
        self._timeout = timeout
        self._warn = warn
        self._on_listed = on_listed
        self.check_output = OutputCheck()
        """Results checked against the listed output schemas, in place of the SDK's check."""
        self._changed = anyio.Event()
        self._listed = anyio.Event()
        """Unset from an announced change until its re-list ends: calls wait for it."""
        self._listed.set()
        self._relist_error: str | None = None

    async def list_tools(self, client: Client) -> list[types.Tool]:
        tools = await paginate(
            self._server, "tools/list", lambda cursor: client.list_tools(cursor=cursor), "tools", self._warn
        )
        tools = first_of_each(self._server, tools, self._warn)
        self.check_output.listed(tools)
        return tools

    def ended(self) -> None:
        """Nothing more will be listed: waiting calls learn the connection's state at once."""
        self._listed.set()

    def announce_change(self) -> None:
        """The server's tools may differ from the last listed until the re-list this starts ends."""
        if self._listed.is_set():
            self._listed = anyio.Event()
        self._changed.set()

    @staticmethod
    def listens(client: Client) -> bool:
        """2026-07-28 servers announce tool changes on a ``subscriptions/listen`` stream."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        caps = client.server_capabilities
        return bool(
            client.protocol_version in MODERN_PROTOCOL_VERSIONS and caps.tools is not None and caps.tools.list_changed
        )

    async def listen(self, client: Client, closing: Callable[[], bool]) -> None:
        try:
            async with client.listen(tools_list_changed=True) as sub:
                async for _event in sub:
                    self.announce_change()
        except Exception as exc:  # noqa: BLE001 - the catalogue then only refreshes on restart
            if not closing():
                log.debug("MCP server %s: listen ended: %s", self._server, exc)

    async def follow_changes(self, client: Client) -> None:
        """Re-list after ``tools/list_changed``; run here, never inside the notification handler."""
        while True:
            await self._changed.wait()
            self._changed = anyio.Event()
            try:
                with anyio.fail_after(self._timeout):
                    tools = await self.list_tools(client)
            except Exception as exc:  # noqa: BLE001
                self._relist_error = str(exc) or type(exc).__name__
                self._warn(f"MCP server {self._server!r}: re-listing tools failed: {exc}")
            else:
                self._relist_error = None
                self._on_listed(tools)
            if not self._changed.is_set():
                self._listed.set()

    async def current(self, tools: Callable[[], list[types.Tool]], live: Callable[[], object], *,
                      relist: bool = False) -> list[types.Tool]:  # fmt: skip
        """``tools()`` once no announced change is left to list (bounded by the startup
        timeout); ``relist`` lists again first; ``live()`` raises when the server is gone."""
        live()
        if relist or self._relist_error is not None:
            self.announce_change()  # a failed re-list is retried rather than trusted
        elif self._listed.is_set():
            return tools()  # nothing announced: no wait to bound (every call passes here)
        with anyio.move_on_after(self._timeout):
            while not self._listed.is_set():
                await self._listed.wait()
        live()
        if not self._listed.is_set():
            raise McpUnavailable(f"MCP server {self._server!r} did not list its tools again within {self._timeout:g} s")
        if self._relist_error is not None:
            raise McpUnavailable(f"MCP server {self._server!r}: listing its tools again failed: {self._relist_error}")
        return tools()
