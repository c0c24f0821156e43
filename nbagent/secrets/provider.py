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

__all__ = ["for_provider"]


def for_provider(instructions: str, tools: list[ToolSpec], redactor: Redactor) -> tuple[str, list[ToolSpec]]:
    """A model request's instructions and tools as the provider is sent them: one scan of every
    tool's text finds that nearly every request holds none."""
    if not redactor:
        return instructions, tools
    if redactor.find(_model_text(tools)) is None:
        return redactor.text(instructions), tools
    return redactor.text(instructions), [
        spec.model_copy(update={"description": redactor.text(spec.description),
                                "parameters": redactor.value(spec.parameters)})
        if redactor.find(_model_text([spec])) is not None else spec
        for spec in tools
    ]


def _model_text(tools: list[ToolSpec]) -> str:
    """What of ``tools`` the model reads besides their names, as one text to scan (orjson: a
    request's 128 tools in ~0.5 ms, where ``json`` takes ~7)."""
    texts = [[spec.description, spec.parameters] for spec in tools]
    try:
        return orjson.dumps(texts).decode()
    except orjson.JSONEncodeError:  # an integer past 64 bits: ``json`` writes anything
        return json.dumps(texts, ensure_ascii=False, default=str)
