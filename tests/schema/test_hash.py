"""The definition hash reads the same bytes whichever encoder writes them: remembered approvals
hold hashes made by earlier versions (DESIGN §5), so a faster encoder may not change one."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbagent.schema import canonical_bytes, definition_hash

FIXED: dict[str, tuple[Any, Any, Any]] = {
    "flat": (
        "Add numbers",
        {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]},
        {"readOnlyHint": True},
    ),
    "pydantic_nulls": (
        "Find",
        {
            "type": "object",
            "properties": {"q": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Q"}},
            "$defs": {"K": {"enum": ["a", "b"]}},
        },
        None,
    ),
    "floats": (
        "Scale",
        {
            "type": "object",
            "properties": {
                "f": {"type": "number", "minimum": 1e-07, "maximum": 1e16, "multipleOf": 0.25, "default": 2.5e-05}
            },
        },
        None,
    ),
    "not_finite": (
        "Odd",
        {"type": "object", "properties": {"x": {"type": "number", "maximum": math.nan, "minimum": -math.inf}}},
        None,
    ),
    "null_for_nan": (
        "Odd",
        {"type": "object", "properties": {"x": {"type": "number", "maximum": None, "minimum": None}}},
        None,
    ),
    "unicode": (
        "Übersetze — 翻訳 😀",
        {
            "type": "object",
            "properties": {
                "é": {"type": "string", "description": '\u2028\x7f\x00\x1f"\\/'},
                "z": {},
                "😀": {},
                "\uffff": {},
            },
        },
        {"title": "Ω"},
    ),
    "surrogate": ("bad \ud800", {"type": "object", "properties": {"\udfff": {"type": "string"}}}, None),
    "big_int": (
        "Big",
        {"type": "object", "properties": {"n": {"type": "integer", "maximum": 2**70, "minimum": -(2**63)}}},
        None,
    ),
    "non_str_keys": ("Keys", {"type": "object", "properties": {1: {"type": "string"}}}, None),
    "tuple": ("Tup", {"type": "object", "properties": {"t": {"enum": ("a", 1, True, None)}}}, None),
    "bools_ints": (
        "BI",
        {"type": "object", "properties": {"b": {"type": "boolean", "default": False, "enum": [True, 0, 1, -5]}}},
        {"destructiveHint": False},
    ),
    "empty": ("", {}, {}),
    "none": (None, None, None),
}
PINNED = {
    "flat": "24b9c7d1d438389b",
    "pydantic_nulls": "a317e0deec9d7294",
    "floats": "b130c050f2be4308",
    "not_finite": "4a8dd534f322609d",
    "null_for_nan": "22364e0e79e0e989",
    "unicode": "07834c6d807bd218",
    "surrogate": "11ab62e2d50bbb38",
    "big_int": "db3619b97d2096f4",
    "non_str_keys": "d6ad48fd6e61b497",
    "tuple": "4a67a77d9336c3b1",
    "bools_ints": "e658557fc675bd2f",
    "empty": "3ef08af3adf45f41",
    "none": "57a1ca7ed708198f",
}
"""Hashes the previous encoder (Python's ``json`` alone) gave these definitions."""


@pytest.mark.parametrize("name", sorted(FIXED))
def test_a_definition_keeps_the_hash_earlier_versions_gave_it(name: str) -> None:
    assert definition_hash(*FIXED[name]) == PINNED[name]


def _reference(value: Any) -> bytes | None:
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
    except (ValueError, TypeError, RecursionError):
        return None
    return text.encode("utf-8", "surrogatepass")


_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([1e-7, 2.5e-05, 1e16, -0.0, 5e-324, 0.1, 100.0])
    | st.text()
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=5),
    max_leaves=25,
)


@settings(max_examples=600, deadline=None)
@given(_json)
def test_canonical_bytes_are_those_of_pythons_json_for_any_value(value: Any) -> None:
    assert canonical_bytes(value) == _reference(value)


def test_nan_and_null_never_share_bytes() -> None:
    nan, null = canonical_bytes({"maximum": math.nan}), canonical_bytes({"maximum": None})
    assert nan == b'{"maximum":NaN}' and null == b'{"maximum":null}'


def test_a_cycle_has_no_canonical_bytes_but_a_stable_hash() -> None:
    cyc: dict[str, Any] = {"type": "object"}
    cyc["self"] = cyc
    assert canonical_bytes(cyc) is None
    assert definition_hash("d", cyc, None) == definition_hash("d", cyc, None)
