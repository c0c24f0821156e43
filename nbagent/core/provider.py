"""The interface every tool source implements: Python functions, native notebook tools and
the MCP connection manager all plug into the one router through it.

Matched structurally (``typing.Protocol``), so lower layers such as ``nbagent.mcp`` implement
it without importing the core.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from nbagent.protocol import CallInfo, ToolResult, ToolSpec
from nbagent.protocol.tools import ProgressFn


@runtime_checkable
class ToolProvider(Protocol):
    """A tool source. One that also has a ``generation`` attribute (any hashable value that
    changes whenever ``list_tools`` would return something else) is listed again only when it
    changes; one without is listed before every model request."""

    def list_tools(self) -> Sequence[ToolSpec]:
        """The current catalogue; re-read whenever it may have changed, so changes show at once."""
        ...

    async def call_tool(
        self, spec: ToolSpec, arguments: dict[str, Any], call: CallInfo, on_progress: ProgressFn | None = None
    ) -> ToolResult:
        """Run one call. Failures come back as ``ToolResult(is_error=True)``, not exceptions."""
        ...


@runtime_checkable
class ChangingToolProvider(ToolProvider, Protocol):
    """A source whose tools can change while a session runs (MCP servers), so an approval must
    be checked against the definition a call will actually run, not the one the model saw."""

    async def current_definition(self, spec: ToolSpec, *, relist: bool = False) -> ToolSpec | str:
        """``spec`` as a call made now would run it, once any announced change has been listed
        (bounded); ``relist`` asks the source again first. A string says why it cannot run."""
        ...


@runtime_checkable
class DeferringToolProvider(ToolProvider, Protocol):
    """A source whose specs may be ``deferred`` (their model-visible schema not made yet)."""

    def complete(self, spec: ToolSpec) -> ToolSpec:
        """``spec`` with the schema the model sees; one that is not deferred as it is."""
        ...
