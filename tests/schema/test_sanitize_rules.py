"""The sanitiser's one table of rules (``nbagent/schema/sanitize/rules.py``) holds its short ways
and its full walk together: a value a fast path copies is one the walk keeps unchanged, and with
every short way turned off the walk gives the same schema and the same warnings, for schemas
built near the accepted form (where the short ways apply, and where they just miss)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import nbagent.schema.sanitize as sanitize_package
from nbagent.schema import sanitize_schema
from nbagent.schema.sanitize import walk
from nbagent.schema.sanitize.rules import CLEAN, LEAF_KEYS, RULES, read

_VALUES: dict[str, list[Any]] = {
    "description": ["d", "é", "\ud800", None, 3],
    "title": ["T", "ü", None],
    "default": ["x", 1, 1.5, None, True, [1], {"a": 1}, float("inf")],
    "enum": [["a", "b"], ["a", "a"], ["é"], [1, 2], [], ["a", 1], "a"],
    "minLength": [0, 3, 3.0, -1, True, "2", 2**70, None],
    "pattern": ["^a+$", "(", "é+", 1, None],
    "format": ["email", "uri", "color", 1, None],
    "minimum": [0, 1.5, -2, float("inf"), True, "1", 2**70],
    "exclusiveMinimum": [0, 2.5, True, False],
    "multipleOf": [0, 2, 0.5, -1],
    "minItems": [0, 2, 2.0, -1, False],
    "type": ["string", "integer", "number", "boolean", "null", ["string", "null"], "bogus"],
}
_VALUES["maxLength"] = _VALUES["minLength"]
_VALUES["maximum"] = _VALUES["minimum"]
_VALUES["exclusiveMaximum"] = _VALUES["exclusiveMinimum"]
_VALUES["maxItems"] = _VALUES["minItems"]
_SCALAR_KEYS = sorted(set().union(*LEAF_KEYS.values()))


def _value(key: str) -> st.SearchStrategy[Any]:
    return st.sampled_from(_VALUES[key])


@st.composite
def _leaf(draw: st.DrawFn) -> dict[str, Any]:
    t = draw(st.sampled_from(sorted(LEAF_KEYS)))
    own = sorted(LEAF_KEYS[t] - {"type"})
    keys = draw(st.sets(st.sampled_from(own if draw(st.integers(0, 4)) else _SCALAR_KEYS), min_size=1, max_size=4))
    out: dict[str, Any] = {k: draw(_value(k)) for k in keys}
    out["type"] = draw(st.just(t) if draw(st.integers(0, 6)) else _value("type"))
    return out


def _container(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    names = st.sampled_from(["a", "b", "é", "c d"])
    obj = st.fixed_dictionaries(
        {"type": st.just("object")},
        optional={
            "properties": st.dictionaries(names, children, max_size=3),
            "required": st.lists(st.sampled_from(["a", "b", "z"]), max_size=3),
            "additionalProperties": st.one_of(st.booleans(), children),
            "description": _value("description"),
            "title": _value("title"),
            "minProperties": st.just(1),
            "$schema": st.just("https://json-schema.org/draft/2020-12/schema"),
        },
    )
    arr = st.fixed_dictionaries(
        {"type": st.just("array")},
        optional={
            "items": st.one_of(st.just(True), st.just(False), children),
            "minItems": _value("minItems"),
            "maxItems": _value("maxItems"),
            "description": _value("description"),
            "prefixItems": st.lists(children, max_size=2),
        },
    )
    return st.one_of(obj, arr)


near_clean = st.recursive(_leaf(), _container, max_leaves=12)


def _walked(schema: Any) -> tuple[dict[str, Any], list[str]]:
    """What the full walk alone gives: every short way turned off."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(sanitize_package, "flat_root", lambda s: None)
        m.setattr(walk, "clean_leaf", lambda s: False)
        m.setattr(walk.Sanitizer, "plain", lambda self, s, depth: (_ for _ in ()).throw(walk.NotPlain()))
        m.setattr(walk.Sanitizer, "dialect_root", lambda self, s: None)
        m.setattr(walk.Sanitizer, "clean_container", lambda self, s, path, depth, refs: None)
        return sanitize_schema(schema)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=near_clean)
def test_the_short_ways_give_what_the_walk_gives(schema: dict[str, Any]) -> None:
    for s in (schema, {"type": "object", "properties": {"p": schema}, "required": ["p"]}):
        assert sanitize_schema(s) == _walked(s), s


def test_every_leaf_keyword_and_sample_value_comes_out_as_the_walk_makes_it() -> None:
    for t, keys in LEAF_KEYS.items():
        for k in sorted(keys):
            for v in _VALUES[k]:
                s = {"type": "object", "properties": {"p": {"type": t, "description": "d", k: v}}}
                assert sanitize_schema(s) == _walked(s), s


@given(key=st.sampled_from(sorted(CLEAN)), data=st.data())
def test_a_value_copied_as_it_is_is_one_the_walk_keeps_unchanged(key: str, data: st.DataObject) -> None:
    value = data.draw(_value(key))
    if CLEAN[key](value) and RULES[key].ok is not None:
        assert read(key, value) is value
