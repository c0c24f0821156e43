"""The definition hash of a tool: what remembered approvals are bound to (DESIGN §5)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
_UNENCODABLE = (ValueError, TypeError, RecursionError)


def canonical_json(value: Any) -> str | None:
    """``value`` as the canonical JSON the hash reads (sorted keys, no whitespace); ``None`` when
    it is not JSON (a cycle, mixed-type keys, nesting too deep to encode)."""
    try:
        return _CANONICAL.encode(value)
    except _UNENCODABLE:
        return None


def definition_hash(description: str | None, input_schema: Any, annotations: Any, *,
                    schema_json: str | None = None) -> str:  # fmt: skip
    """Stable short hash of what a tool claims to be; remembered approvals are bound to it.

    Canonical JSON (sorted keys, no whitespace) of description, schema and annotations, so a
    server reordering keys does not reset approvals but changing any text or value does.
    ``schema_json`` is ``canonical_json(input_schema)`` when the caller has it already: the
    text is then assembled around it instead of encoding the schema a second time.
    """
    if hasattr(annotations, "model_dump"):
        annotations = annotations.model_dump(mode="json", exclude_none=True)
    try:
        schema = schema_json if schema_json is not None else _CANONICAL.encode(input_schema)
        # The same text as encoding the whole payload at once: its keys sort in this order.
        text = (
            f'{{"annotations":{_CANONICAL.encode(annotations)},"description":{_CANONICAL.encode(description)},'
            f'"input_schema":{schema}}}'
        )
    except _UNENCODABLE:  # cycles or mixed-type keys: still deterministic
        text = repr({"annotations": annotations, "description": description, "input_schema": input_schema})
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
