"""Reading stream parts that may be SDK models, extra fields on them, or plain dicts.

The SDK builds stream parts without validating them, so a field of the wrong type reaches the
parser as it came; ``typed`` turns one into a ``BadReply`` naming the field instead of a crash.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from nbagent.models.retry import BadReply

STRING = "a string"
INTEGER = "an integer"
ARRAY = "an array"
OBJECT = "an object"
_TYPES: dict[str, tuple[type, ...]] = {STRING: (str,), INTEGER: (int,), ARRAY: (list,), OBJECT: (dict, BaseModel)}


def get_field(obj: Any, key: str, default: Any = None) -> Any:
    """Lenient servers send fields the SDK does not declare; read those the same way. Only an
    object has fields: a string where an object belongs has none (not ``str.index``)."""
    if isinstance(obj, dict):
        return obj.get(key, default)
    if not isinstance(obj, BaseModel):
        return default
    value = getattr(obj, key, default)
    if value is default:
        extra = obj.model_extra
        if extra:
            value = extra.get(key, default)
    return value


def json_kind(value: Any) -> str:
    """What a value is, in the JSON terms the API documents fields with."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    for kind, types in _TYPES.items():
        if isinstance(value, types):
            return kind
    return type(value).__name__


def typed(obj: Any, key: str, expected: str, at: str = "") -> Any:
    """``obj.key`` when it is absent, null or ``expected``; anything else is a reply that breaks
    the API. The message names the field (``at`` says where it is) and its type, never its value,
    which may hold a secret."""
    value = get_field(obj, key)
    if value is None or (isinstance(value, _TYPES[expected]) and not isinstance(value, bool)):
        return value
    raise BadReply(f"{at}{key} is {json_kind(value)}, not {expected}")


def objects(obj: Any, key: str, at: str = "") -> list[Any]:
    """``obj.key`` as a list of objects; empty when absent or null."""
    items: list[Any] = typed(obj, key, ARRAY, at) or []
    for n, item in enumerate(items):
        if not isinstance(item, _TYPES[OBJECT]):
            raise BadReply(f"{at}{key}[{n}] is {json_kind(item)}, not {OBJECT}")
    return items


def arguments(obj: Any, at: str = "") -> str | None:
    """A call's ``arguments``: JSON text, or the object a few servers send already parsed."""
    value = get_field(obj, "arguments")
    if isinstance(value, dict):
        return json.dumps(value)
    if value is None or isinstance(value, str):
        return value
    raise BadReply(f"{at}arguments is {json_kind(value)}, not a string (or an object)")


def not_a_stream(stream: Any) -> BadReply | None:
    """Why a stream that ended without its end was never one (an HTML page, a JSON body), if so."""
    kind = stream.response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "text/event-stream":
        return None
    return BadReply(f"the reply was {kind or 'of no content type'}, not an event stream")
