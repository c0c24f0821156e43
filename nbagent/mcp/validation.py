"""A tool result's structured content checked against the tool's ``outputSchema`` (DESIGN §7, §13).

``jsonschema`` is not used here: importing it imports every format checker installed beside it,
and Jupyter installs them (``rfc3987_syntax`` alone compiles a grammar for seconds), so the first
result of every process would wait on them. ``jsonschema_rs`` validates the same drafts with no
such import. The schema is the server's, so it is untrusted: no ``$ref`` is fetched (the SDK's own
check resolved none either), formats are annotations as they are for the SDK, and a ``pattern``
runs on an engine whose backtracking is bounded, so it cannot freeze the event loop.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import mcp_types as types

if TYPE_CHECKING:
    import jsonschema_rs


class SchemaUnusable(ValueError):
    """The schema cannot be compiled (invalid, or a ``$ref`` outside the document)."""


def _no_retrieval(uri: str) -> Any:
    raise ValueError(f"$ref {uri!r} is outside the schema and is never fetched")


def compiled(schema: dict[str, Any]) -> jsonschema_rs.Validator:
    """``schema`` compiled (once per distinct schema); ``SchemaUnusable`` when it cannot be used."""
    return _compiled(json.dumps(schema, sort_keys=True, separators=(",", ":")))


@lru_cache(maxsize=1024)
def _compiled(schema_json: str) -> jsonschema_rs.Validator:
    import jsonschema_rs  # on the first schema, not on the way to a ready session

    try:
        return jsonschema_rs.validator_for(json.loads(schema_json), retriever=_no_retrieval, validate_formats=False)
    except (jsonschema_rs.ValidationError, ValueError) as exc:
        raise SchemaUnusable(str(exc).split("\n", 1)[0]) from None


def first_problem(validator: jsonschema_rs.Validator, value: Any) -> str | None:
    """Why ``value`` fails ``validator`` (``at PATH: message``), or ``None``."""
    error = next(iter(validator.iter_errors(value)), None)
    if error is None:
        return None
    where = "/".join(str(p) for p in error.instance_path) or "(root)"
    return f"at {where}: {error.message}"


class OutputCheck:
    """Stands in for ``ClientSession.validate_tool_result``: the same refusals as the SDK's check
    (``RuntimeError`` for missing or non-conforming structured content and for an unusable schema),
    from the tools the connection listed, without importing ``jsonschema``."""

    def __init__(self) -> None:
        self._schemas: dict[str, dict[str, Any]] = {}
        self._validators: dict[str, jsonschema_rs.Validator] = {}

    def listed(self, tools: list[types.Tool]) -> None:
        """The tools (and so the output schemas) the server lists now."""
        self._schemas = {t.name: t.output_schema for t in tools if t.output_schema is not None}
        self._validators = {}

    async def __call__(self, name: str, result: types.CallToolResult) -> None:
        schema = self._schemas.get(name)
        if schema is None:
            return
        if result.structured_content is None and "structured_content" not in result.model_fields_set:
            raise RuntimeError(f"Tool {name} has an output schema but did not return structured content")
        try:
            validator = self._validators.get(name) or self._validators.setdefault(name, compiled(schema))
        except SchemaUnusable as exc:
            raise RuntimeError(f"Invalid schema for tool {name}: {exc}") from None
        problem = first_problem(validator, result.structured_content)
        if problem is not None:
            raise RuntimeError(f"Invalid structured content returned by tool {name}: {problem}")
