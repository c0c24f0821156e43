"""The definition hash of a tool: what remembered approvals are bound to (DESIGN §5).

The hash reads the canonical JSON of Python's ``json`` (sorted keys, no whitespace, UTF-8,
``repr`` for what JSON lacks), and remembered approvals hold hashes of those bytes, so they may
not change. ``orjson`` writes the same bytes several times faster for JSON without floats (it
spells ``1e-07`` as ``1e-7`` and ``NaN`` as ``null``); a value with a float, or with anything
but exact JSON types, takes Python's encoder, decided from orjson's own output.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson
import pydantic_core

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
_UNENCODABLE = (ValueError, TypeError, RecursionError)
_FAST = orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATETIME | \
    orjson.OPT_PASSTHROUGH_DATACLASS  # fmt: skip
"""Subclasses (``IntEnum``, ``StrEnum``), datetimes and dataclasses go to ``_refuse``, so to ``json``."""
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
"""orjson writes every finite float as a digit before ``.`` or ``e``: with digits made ``0``, two
substring tests find them fast (as they find such text in strings, which costs only time)."""


def _refuse(value: Any) -> Any:
    raise TypeError


def _fast(value: Any) -> bytes | None:
    """orjson's bytes where they are exactly ``json``'s, else ``None``.

    A float in orjson's text shows as a digit before ``.`` or ``e``, or, when not finite, as
    ``null``: a ``null`` value is told apart from NaN by an encoder that spells NaN out. A match
    inside a string only sends the value to ``json``. orjson refuses lone surrogates, integers
    past 64 bits and non-string keys itself. It writes ``uuid.UUID`` and plain ``Enum`` members
    as their value where ``json`` writes their ``repr``; neither comes from JSON, so no
    server's schema holds one.
    """
    try:
        out = orjson.dumps(value, default=_refuse, option=_FAST)
    except (TypeError, orjson.JSONEncodeError):
        return None
    if value.__class__ is str:  # no number in it (a subclass went to ``_refuse``)
        return out
    digits = out.translate(_DIGITS)
    if b"0." in digits or b"0e" in digits:
        return None
    if b"null" in out and (b":null" in out or b",null" in out or b"[null" in out or out == b"null"):
        try:
            spelled = pydantic_core.to_json(value, inf_nan_mode="constants")
        except pydantic_core.PydanticSerializationError:
            return None
        if b"NaN" in spelled or b"Infinity" in spelled:
            return None
    return out


def canonical_bytes(value: Any) -> bytes | None:
    """``value`` as the UTF-8 canonical JSON the hash reads (sorted keys, no whitespace);
    ``None`` when it is not JSON (a cycle, mixed-type keys, nesting too deep to encode)."""
    out = _fast(value)
    if out is not None:
        return out
    try:
        return _CANONICAL.encode(value).encode("utf-8", "surrogatepass")
    except _UNENCODABLE:
        return None


def definition_hash(description: str | None, input_schema: Any, annotations: Any, *, title: str | None = None,
                    schema_json: bytes | None = None) -> str:  # fmt: skip
    """Stable short hash of what a tool claims to be; remembered approvals are bound to it.

    Canonical JSON (sorted keys, no whitespace) of description, schema, annotations and, when
    the tool has one, title (the approval panel's heading), so a server reordering keys does not
    reset approvals but changing any text or value does; a tool without a title hashes the
    bytes it always did. ``schema_json`` is ``canonical_bytes(input_schema)`` when the caller
    has it already: the text is then assembled around it instead of encoding it a second time.
    """
    if hasattr(annotations, "model_dump"):
        annotations = annotations.model_dump(mode="json", exclude_none=True)
    schema = schema_json if schema_json is not None else canonical_bytes(input_schema)
    ann, desc = canonical_bytes(annotations), canonical_bytes(description)
    named = canonical_bytes(title) if title is not None else b""
    if schema is not None and ann is not None and desc is not None and named is not None:
        # The same bytes as encoding the whole payload at once: its keys sort in this order.
        text = b'{"annotations":%b,"description":%b,"input_schema":%b%b}' % (
            ann, desc, schema, b',"title":%b' % named if title is not None else b""
        )
    else:  # cycles or mixed-type keys: still deterministic
        payload = {"annotations": annotations, "description": description, "input_schema": input_schema}
        text = repr(payload if title is None else {**payload, "title": title}).encode("utf-8", "surrogatepass")
    return hashlib.sha256(text).hexdigest()[:16]
