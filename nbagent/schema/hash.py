"""The definition hash of a tool: what remembered approvals are bound to (DESIGN §5)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)


def definition_hash(description: str | None, input_schema: Any, annotations: Any) -> str:
    """Stable short hash of what a tool claims to be; remembered approvals are bound to it.

    Canonical JSON (sorted keys, no whitespace) of description, schema and annotations, so a
    server reordering keys does not reset approvals but changing any text or value does.
    """
    if hasattr(annotations, "model_dump"):
        annotations = annotations.model_dump(mode="json", exclude_none=True)
    payload = {"annotations": annotations, "description": description, "input_schema": input_schema}
    try:
        text = _CANONICAL.encode(payload)
    except (ValueError, TypeError, RecursionError):  # cycles or mixed-type keys: still deterministic
        text = repr(payload)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
