"""What a model provider is sent of a request's instructions and tools: what the rollout hides,
hidden, as in the history the request carries.

A server may put the secrets it was given in its instructions, a description or its schema (a
default, an enum, a property's name). Names are left as they are: a call is routed by its name,
and the catalogue leaves out a tool whose name holds a secret (``CatalogBuilder``).
"""

from __future__ import annotations

import json

import orjson

from nbagent.protocol import ToolSpec
from nbagent.secrets.redactor import Redactor

__all__ = ["ProviderRedaction"]


class ProviderRedaction:
    """``for_provider`` with what it did remembered, so an unchanged catalogue costs a lookup
    per tool: each tool's spec as sent is kept per spec object (the router and the catalogue
    keep one per generation) and per secret set (``Redactor.secrets``), so a secret learned
    since a spec was kept is still hidden from it."""

    def __init__(self) -> None:
        self._secrets: frozenset[str] = frozenset()
        self._specs: dict[int, tuple[ToolSpec, ToolSpec]] = {}
        """``id(spec)`` -> (that spec, as sent); the spec is kept so its id names no other."""
        self._instructions = ("", "")

    def for_provider(self, instructions: str, tools: list[ToolSpec], redactor: Redactor) -> tuple[str, list[ToolSpec]]:
        """A model request's instructions and tools as the provider is sent them: one scan of
        the text of the tools not seen under these secrets finds that nearly all hold none."""
        if not redactor:
            return instructions, tools
        if redactor.secrets != self._secrets:
            self._secrets, self._specs, self._instructions = redactor.secrets, {}, ("", "")
        if self._instructions[0] != instructions:
            self._instructions = (instructions, redactor.text(instructions))
        kept = self._specs
        fresh = [spec for spec in tools if (seen := kept.get(id(spec))) is None or seen[0] is not spec]
        if fresh:
            clean = redactor.find(_model_text(fresh)) is None
            kept.update((id(spec), (spec, spec if clean else _sent(spec, redactor))) for spec in fresh)
            if len(kept) > 2 * len(tools):  # a catalogue replaced: forget the specs of the old one
                self._specs = kept = {id(spec): kept[id(spec)] for spec in tools}
        return self._instructions[1], [kept[id(spec)][1] for spec in tools]


def _sent(spec: ToolSpec, redactor: Redactor) -> ToolSpec:
    if redactor.find(_model_text([spec])) is None:
        return spec
    return spec.model_copy(update={"description": redactor.text(spec.description),
                                   "parameters": redactor.value(spec.parameters)})


def _model_text(tools: list[ToolSpec]) -> str:
    """What of ``tools`` the model reads besides their names, as one text to scan (orjson: a
    request's 128 tools in ~0.5 ms, where ``json`` takes ~7)."""
    texts = [[spec.description, spec.parameters] for spec in tools]
    try:
        return orjson.dumps(texts).decode()
    except orjson.JSONEncodeError:  # an integer past 64 bits: ``json`` writes anything
        return json.dumps(texts, ensure_ascii=False, default=str)
