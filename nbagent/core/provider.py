"""The interface every tool source implements: Python functions, native notebook tools and
the MCP connection manager all plug into the one router through it.

Matched structurally (``typing.Protocol``), so lower layers such as ``nbagent.mcp`` implement
it without importing the core.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from nbagent.protocol import CallInfo, ToolResult, ToolSpec

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
"""``(progress, total, message)``: feeds ``progress`` events and a tool card's bar."""


@runtime_checkable
class ToolProvider(Protocol):
    def list_tools(self) -> Sequence[ToolSpec]:
        """The current catalogue; re-read before every model request, so changes show at once."""
        ...

    async def call_tool(
        self, spec: ToolSpec, arguments: dict[str, Any], call: CallInfo, on_progress: ProgressFn | None = None
    ) -> ToolResult:
        """Run one call. Failures come back as ``ToolResult(is_error=True)``, not exceptions."""
        ...
