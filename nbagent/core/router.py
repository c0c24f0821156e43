"""The one tool router: every call of every source is resolved here by model-visible name."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from types import MappingProxyType

from nbagent.core.provider import MEMBERS, ToolProvider
from nbagent.protocol import ToolSpec

Catalogue = Mapping[str, tuple[ToolSpec, ToolProvider]]


class ToolRouter:
    """Merges providers into one catalogue. Earlier providers win a name clash (native and
    Python tools come first, and MCP names always carry the ``mcp__`` prefix, so no server can
    shadow them).

    The merge is kept until a provider's ``generation`` changes (read before every model
    request, it must not cost more as the catalogue grows); a provider whose ``generation`` is
    ``None`` is merged again on every read."""

    def __init__(self) -> None:
        self._providers: list[ToolProvider] = []
        self._memo: tuple[tuple[Hashable, ...], Catalogue, Sequence[ToolSpec]] | None = None

    def add(self, provider: ToolProvider, *, first: bool = False) -> None:
        missing = [name for name in MEMBERS if not hasattr(provider, name)]
        if missing:
            raise TypeError(
                f"{type(provider).__qualname__} is not a tool source: it has no {', '.join(missing)} "
                "(subclass nbagent.core.provider.ToolProvider for the defaults)"
            )
        if provider in self._providers:
            return
        if first:
            self._providers.insert(0, provider)
        else:
            self._providers.append(provider)
        self._memo = None

    def remove(self, provider: ToolProvider) -> None:
        if provider in self._providers:
            self._providers.remove(provider)
            self._memo = None

    async def aclose(self, closed: Collection[ToolProvider] = ()) -> None:
        """Close every source with an ``aclose`` (the ``shell`` tool's fork server) but those in
        ``closed`` (already closed by their owner), so no process of theirs outlives the session."""
        for provider in self._providers:
            close = getattr(provider, "aclose", None)
            if close is not None and provider not in closed:
                await close()

    def catalogue(self) -> Catalogue:
        """Model-visible name -> (spec, provider); read-only, shared by every reader until a
        provider changes."""
        return self._current()[1]

    def specs(self) -> Sequence[ToolSpec]:
        return self._current()[2]

    @staticmethod
    def for_model(entries: Iterable[tuple[ToolSpec, ToolProvider]]) -> list[ToolSpec]:
        """The specs as a model request carries them: a deferred one is completed by its source
        (its schema sanitised now, once)."""
        return [p.complete(spec) if spec.deferred else spec for spec, p in entries]

    def _current(self) -> tuple[tuple[Hashable, ...], Catalogue, Sequence[ToolSpec]]:
        key = tuple(provider.generation for provider in self._providers)
        memo = self._memo
        if memo is not None and memo[0] == key and None not in key:
            return memo
        merged: dict[str, tuple[ToolSpec, ToolProvider]] = {}
        for provider in self._providers:
            for spec in provider.list_tools():
                merged.setdefault(spec.name, (spec, provider))
        self._memo = (key, MappingProxyType(merged), tuple(spec for spec, _ in merged.values()))
        return self._memo
