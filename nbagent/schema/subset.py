"""The JSON Schema subset the OpenAI function API takes (DESIGN §4): types, keywords, formats,
limits, and the value tests the sanitiser, the checker and strict mode share."""

from __future__ import annotations

import math
from typing import Any

JSON_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")
MAX_DEPTH = 10
"""Schema hops from the root at which nodes become childless leaves (an array leaf keeps a
typed ``items`` one level further): the API limits nesting and deep schemas rarely mean much."""
MAX_ENUM = 1000

ALLOWED_KEYWORDS = frozenset(
    {
        "type", "description", "title", "default", "enum", "anyOf",
        "properties", "required", "additionalProperties",
        "items", "minItems", "maxItems",
        "minLength", "maxLength", "pattern", "format",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    }
)  # fmt: skip
"""Keywords the output may contain: the conservative common subset of the function API."""
STRICT_KEYWORDS = frozenset(
    {
        "type", "description", "enum", "anyOf", "properties", "required", "additionalProperties",
        "items", "minItems", "maxItems", "pattern", "format",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    }
)  # fmt: skip
"""Keywords strict mode takes; ``title``/``default`` are dropped, anything else disqualifies."""
FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid", "uri"})
STRICT_FORMATS = FORMATS - {"uri"}
NUMBER_KEYS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")


def is_num(v: Any) -> bool:
    return not isinstance(v, bool) and (isinstance(v, int) or (isinstance(v, float) and math.isfinite(v)))


def ok_str(v: Any) -> bool:
    """A string that encodes as UTF-8 (no lone surrogates)."""
    if not isinstance(v, str):
        return False
    if v.isascii():
        return True
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int)) or (isinstance(v, float) and math.isfinite(v)) or ok_str(v)

