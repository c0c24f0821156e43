"""Reading stream parts that may be SDK models, extra fields on them, or plain dicts."""

from __future__ import annotations

from typing import Any


def get_field(obj: Any, key: str, default: Any = None) -> Any:
    """Lenient servers send fields the SDK does not declare; read those the same way."""
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(key, default)
    value = getattr(obj, key, default)
    if value is default:
        extra = getattr(obj, "model_extra", None)
        if extra:
            value = extra.get(key, default)
    return value
