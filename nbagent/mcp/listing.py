"""A server's ``tools/list`` read as MCP types it, where the SDK reads more into it (DESIGN §3).

- **Hints count only as JSON booleans.** The SDK's models read ``"false"`` as ``False`` and
  ``"true"`` (or ``1``) as ``True``, so a server could spell ``readOnlyHint`` as a string and be
  taken at its word. ``ToolHints`` sits between the transport and the SDK and drops every hint of
  a listed tool that is not a boolean, before the SDK parses it: the hint is then absent, which
  MCP defines as the cautious reading (not read-only, destructive, open world).
- **One tool per name.** A listing that names a tool twice keeps the first (``first_of_each``):
  the catalogue, the output schema a result is checked against and every count then agree on
  which definition the name means.

Each says what it left out in a warning naming the server and the tool.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Any

import mcp_types as types

from nbagent.mcp.wire import watched

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
