"""The one tool router: every call of every source is resolved here by model-visible name."""

from __future__ import annotations

from collections.abc import Sequence

from nbagent.core.provider import ToolProvider
from nbagent.protocol import ToolSpec


class ToolRouter:
    """Merges providers into one catalogue. Earlier providers win a name clash (native and
    Python tools come first, and MCP names always carry the ``mcp__`` prefix, so no server can
    shadow them)."""

    def __init__(self) -> None:
        self._providers: list[ToolProvider] = []

    def add(self, provider: ToolProvider, *, first: bool = False) -> None:
        if provider in self._providers:
            return
        if first:
            self._providers.insert(0, provider)
        else:
            self._providers.append(provider)

    def remove(self, provider: ToolProvider) -> None:
        if provider in self._providers:
            self._providers.remove(provider)

    def catalogue(self) -> dict[str, tuple[ToolSpec, ToolProvider]]:
        merged: dict[str, tuple[ToolSpec, ToolProvider]] = {}
        for provider in self._providers:
            for spec in provider.list_tools():
                merged.setdefault(spec.name, (spec, provider))
        return merged

    def specs(self) -> Sequence[ToolSpec]:
        return [spec for spec, _ in self.catalogue().values()]
