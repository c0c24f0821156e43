"""The interface every tool source implements: Python functions, native notebook tools and
the MCP connection manager all plug into the one router through it.

Matched structurally (``typing.Protocol``), so lower layers such as ``nbagent.mcp`` implement
it without importing the core; a source in the core or in ``nbagent.tools`` subclasses it and
inherits the defaults of what only some sources need (a changing catalogue, deferred schemas,
arguments a remote source must not be sent). The router refuses a source that lacks a member,
naming it, rather than failing at its first call.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Protocol

from nbagent.protocol import CallInfo, PatchChange, ToolResult, ToolSpec
from nbagent.protocol.tools import ProgressFn


class ToolProvider(Protocol):
    """A tool source."""

    @property
    def generation(self) -> Hashable | None:
        """Any value that changes whenever ``list_tools`` would return something else, so the
        catalogue is merged again only then; ``None``: listed again before every model request.
        A source with one declares it as a plain attribute (``generation = 0``) and bumps it."""
        return None

    def list_tools(self) -> Sequence[ToolSpec]:
        """The current catalogue; re-read whenever it may have changed, so changes show at once."""
        ...

    async def call_tool(
        self, spec: ToolSpec, arguments: dict[str, Any], call: CallInfo, on_progress: ProgressFn | None = None
    ) -> ToolResult:
        """Run one call. Failures come back as ``ToolResult(is_error=True)``, not exceptions."""
        ...

    async def current_definition(self, spec: ToolSpec, *, relist: bool = False) -> ToolSpec | str:
        """``spec`` as a call made now would run it: a source whose tools change while a session
        runs (MCP servers) lists an announced change first (bounded), and ``relist`` asks it again,
        so an approval is checked against what will run. A string says why it cannot run."""
        return spec

    def complete(self, spec: ToolSpec) -> ToolSpec:
        """``spec`` with the schema the model sees, for a source whose specs may be ``deferred``
        (their model-visible schema not made yet)."""
        return spec

    def withheld(self, spec: ToolSpec, arguments: dict[str, Any]) -> str | None:
        """Why ``arguments`` must not reach this source (never the secret's value); ``None`` when
        they may. A source outside this process (MCP servers) must not be sent a secret it was not
        given; Python function and notebook tools run in the process that holds the secrets
        already. Called for every call, so it must cost one scan, not a lookup of secrets."""
        return None


    async def preview(self, spec: ToolSpec, arguments: dict[str, Any]) -> list[PatchChange]:
        """What a call with ``arguments`` would change, diffed against what is there now, for its
        approval to show (a file's patch, a notebook cell's new source); empty when the source
        cannot tell (a server's tool). Raises ``ValueError`` saying why it cannot be shown."""
        return []


MEMBERS = ("generation", "list_tools", "call_tool", "current_definition", "complete", "withheld", "preview")
"""What the router checks a source has when it is added."""
