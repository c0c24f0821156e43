"""Schema sanitising: every rule by example, and a fuzz test against the API checker."""

from __future__ import annotations

import copy
import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nbagent.protocol.tools import ToolAnnotations
from nbagent.schema import MAX_DEPTH, definition_hash, make_strict, openai_schema_problems, sanitize_schema


def clean(schema: object) -> dict:
    out, _ = sanitize_schema(schema)
    assert openai_schema_problems(out) == [], out
    return out


def obj(**props: object) -> dict:
    return {"type": "object", "properties": props}


# ---------------------------------------------------------------------------------------------
# fuzz

_KEYWORDS = [
    "type", "properties", "required", "items", "enum", "const", "anyOf", "oneOf", "allOf", "not",
    "$ref", "$defs", "definitions", "additionalProperties", "patternProperties", "prefixItems",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
    "maxLength", "pattern", "format", "minItems", "maxItems", "default", "description", "title",
    "nullable", "if", "then", "else", "$schema", "examples", "x-vendor",
]  # fmt: skip
_REFS = [
    "#",
    "#/$defs/a",
    "#/$defs/b",
    "#/definitions/c",
    "#/properties/p",
    "#/$defs/missing",
    "http://x/y",
    "#anchor",
    "#/$defs/a/properties/p",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
names = st.one_of(st.sampled_from(["p", "q", "a", "b", "", "é", "a.b", "$ref"]), st.text(max_size=8))
types = st.one_of(
    st.sampled_from(["string", "number", "integer", "boolean", "object", "array", "null", "any", "int", ""]),
    st.lists(st.sampled_from(["string", "number", "integer", "null", "object", "array", "bogus"]), max_size=4),
    scalars,
)


def _schema_from(children: st.SearchStrategy) -> st.SearchStrategy:
    value = st.one_of(
        types.map(lambda t: ("type", t)),
        st.sampled_from(_REFS).map(lambda r: ("$ref", r)),
        st.dictionaries(names, children, max_size=4).map(lambda d: ("properties", d)),
        st.lists(st.one_of(names, scalars), max_size=4).map(lambda r: ("required", r)),
        children.map(lambda c: ("items", c)),
        st.lists(children, max_size=3).map(lambda c: ("items", c)),
        st.lists(scalars, max_size=5).map(lambda e: ("enum", e)),
        st.one_of(scalars, st.lists(scalars, max_size=2)).map(lambda c: ("const", c)),
        st.tuples(
            st.sampled_from(["anyOf", "oneOf", "allOf", "prefixItems"]),
            st.one_of(st.lists(children, max_size=4), children),
        ),
        st.dictionaries(st.sampled_from(["a", "b", "c"]), children, max_size=3).map(lambda d: ("$defs", d)),
        st.dictionaries(st.sampled_from(["c"]), children, max_size=1).map(lambda d: ("definitions", d)),
        st.one_of(st.booleans(), children, scalars).map(lambda c: ("additionalProperties", c)),
        st.tuples(st.sampled_from(_KEYWORDS), st.one_of(scalars, children)),
        st.tuples(st.sampled_from(["pattern"]), st.sampled_from(["^a+$", "(", "[a-", "\\d", "(?P<x>"])),
        st.tuples(st.sampled_from(["format"]), st.sampled_from(["email", "uri", "date-time", "color", "int32"])),
    )
    return st.one_of(
        st.lists(value, max_size=6).map(dict),
        st.booleans(),
        scalars,
    )


schemas = st.recursive(
    st.one_of(st.booleans(), st.just({}), scalars, st.lists(scalars, max_size=2)), _schema_from, max_leaves=30
)


def _with_defs(s: object, defs: dict) -> object:
    if isinstance(s, dict):
        return {**s, "$defs": {**defs, **(s.get("$defs") if isinstance(s.get("$defs"), dict) else {})}}
    return s


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas, st.dictionaries(st.sampled_from(["a", "b"]), schemas, max_size=2))
def test_fuzz_never_raises_and_output_is_accepted(schema: object, defs: dict) -> None:
    schema = _with_defs(schema, defs)
    before = repr(schema)
    out, warnings = sanitize_schema(schema)
    assert openai_schema_problems(out) == [], (schema, out)
    assert all(isinstance(w, str) for w in warnings)
    assert not any("could not be sanitised" in w for w in warnings), "the last-resort handler must not be needed"
    json.dumps(out, allow_nan=False)
    assert repr(schema) == before, "the input must not be mutated"
    strict = make_strict(out)
    if strict is not None:
        assert openai_schema_problems(strict) == []


@settings(max_examples=150, deadline=None)
@given(schemas)
def test_fuzz_sanitising_is_idempotent_on_its_output(schema: object) -> None:
    out, _ = sanitize_schema(schema)
    again, _ = sanitize_schema(out)
    assert openai_schema_problems(again) == []
    assert again == out


# ---------------------------------------------------------------------------------------------
# pathological inputs


def test_non_dict_inputs_degrade_to_empty_object() -> None:
    for bad in (None, 3, "x", [1, 2], True, False, float("nan"), object()):
        out, _ = sanitize_schema(bad)
        assert out == {"type": "object", "properties": {}}


def test_python_level_cycle() -> None:
    s: dict = {"type": "object", "properties": {}}
    s["properties"]["self"] = s
    out = clean(s)
    assert out["properties"]["self"]["type"] == "object"


def test_huge_nesting_is_capped() -> None:
    s: dict = {"type": "string"}
    for _ in range(5000):
        s = {"type": "object", "properties": {"x": s}}
    out, warnings = sanitize_schema(s)
    assert openai_schema_problems(out) == []
    assert any("deeper" in w for w in warnings)
    depth, node = 0, out
    while "properties" in node and "x" in node["properties"]:
        node, depth = node["properties"]["x"], depth + 1
    assert depth <= MAX_DEPTH + 1


def test_ref_fanout_is_bounded() -> None:
    defs = {
        f"d{i}": {
            "type": "object",
            "properties": {"l": {"$ref": f"#/$defs/d{i + 1}"}, "r": {"$ref": f"#/$defs/d{i + 1}"}},
        }
        for i in range(40)
    }
    defs["d40"] = {"type": "string"}
    out, _ = sanitize_schema({"$defs": defs, "$ref": "#/$defs/d0"})
    assert openai_schema_problems(out) == []


def test_nan_and_non_string_keys() -> None:
    out = clean(
        {
            "type": "object",
            "properties": {
                1: {"type": "number", "maximum": float("inf")},
                "d": {"default": math.nan, "type": "number"},
            },
        }
    )
    assert out["properties"]["1"] == {"type": "number"}
    assert "default" not in out["properties"]["d"]


# ---------------------------------------------------------------------------------------------
# rules by example


def test_top_level_gets_type_object_and_properties() -> None:
    assert clean({}) == {"type": "object", "properties": {}}
    assert clean({"properties": {"a": {"type": "string"}}}) == obj(a={"type": "string"})
    out, w = sanitize_schema({"type": "string"})
    assert out == {"type": "object", "properties": {}} and w


def test_local_refs_resolve() -> None:
    s = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "#/definitions/B", "description": "bee"}},
        "$defs": {"A": {"type": "integer"}},
        "definitions": {"B": {"type": "string", "description": "orig"}},
    }
    assert clean(s) == obj(a={"type": "integer"}, b={"type": "string", "description": "bee"})


def test_ref_with_escaped_pointer() -> None:
    s = {"type": "object", "properties": {"a": {"$ref": "#/$defs/x~1y"}}, "$defs": {"x/y": {"type": "boolean"}}}
    assert clean(s)["properties"]["a"] == {"type": "boolean"}


def test_recursive_ref_degrades_with_warning() -> None:
    s = {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/node"}},
        "$defs": {
            "node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}
        },
    }
    out, w = sanitize_schema(s)
    assert openai_schema_problems(out) == []
    assert out["properties"]["tree"]["properties"]["kids"]["items"] == {"type": "object"}
    assert any("recursive" in x for x in w)


def test_unresolvable_and_remote_refs_dropped_with_warning() -> None:
    out, w = sanitize_schema(obj(a={"$ref": "https://example.com/s.json", "type": "string"}, b={"$ref": "#/nope"}))
    assert out["properties"]["a"] == {"type": "string"}
    assert openai_schema_problems(out) == []
    assert len([x for x in w if "unresolvable" in x]) == 2


def test_single_branch_combinators_unwrap() -> None:
    for k in ("oneOf", "anyOf", "allOf"):
        assert clean(obj(a={k: [{"type": "string"}], "description": "d"}))["properties"]["a"] == {
            "type": "string",
            "description": "d",
        }


def test_multi_branch_allof_merges() -> None:
    a = {
        "allOf": [
            {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
            {"properties": {"y": {"type": "integer", "minimum": 0}}, "required": ["y"]},
            {"properties": {"y": {"maximum": 9}}},
        ]
    }
    assert clean(obj(a=a))["properties"]["a"] == {
        "type": "object",
        "properties": {"x": {"type": "string"}, "y": {"type": "integer", "minimum": 0, "maximum": 9}},
        "required": ["x", "y"],
    }


def test_allof_numeric_bounds_and_types_intersect() -> None:
    a = {"allOf": [{"type": ["number", "string"], "minimum": 1, "maxLength": 3}, {"type": "integer", "minimum": 5}]}
    assert clean(obj(a=a))["properties"]["a"] == {"type": "integer", "minimum": 5}


def test_oneof_becomes_anyof() -> None:
    out, w = sanitize_schema(obj(a={"oneOf": [{"type": "string"}, {"type": "integer"}]}))
    assert out["properties"]["a"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert any("oneOf" in x for x in w)


def test_anyof_siblings_pushed_into_branches() -> None:
    a = {"type": "string", "anyOf": [{"format": "date"}, {"format": "date-time"}], "description": "when"}
    assert clean(obj(a=a))["properties"]["a"] == {
        "description": "when",
        "anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}],
    }


def test_anyof_with_a_permissive_branch_constrains_nothing() -> None:
    assert clean(obj(a={"type": "string", "anyOf": [{"minLength": 2}, True]}))["properties"]["a"] == {"type": "string"}


def test_nullable_anyof_kept() -> None:
    assert clean(obj(a={"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}))["properties"]["a"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "default": None,
    }


def test_const_becomes_enum() -> None:
    assert clean(obj(a={"const": "x"}))["properties"]["a"] == {"type": "string", "enum": ["x"]}


def test_type_inference() -> None:
    out = clean(
        obj(
            e={"enum": [1, 2]},
            m={"enum": ["a", None]},
            o={"properties": {}},
            a={"items": {"type": "string"}},
            s={"maxLength": 3},
            n={"minimum": 0},
        )
    )
    p = out["properties"]
    assert p["e"]["type"] == "integer"
    assert p["m"]["type"] == ["string", "null"]
    assert p["o"]["type"] == "object"
    assert p["a"] == {"type": "array", "items": {"type": "string"}}
    assert p["s"] == {"type": "string", "maxLength": 3}
    assert p["n"] == {"type": "number", "minimum": 0}


def test_no_type_at_all_is_permissive_but_typed() -> None:
    p = clean(obj(a={"description": "anything"}))["properties"]["a"]
    assert "array" in p["type"] and "items" in p and p["description"] == "anything"


def test_arrays_get_items() -> None:
    assert clean(obj(a={"type": "array"}))["properties"]["a"]["items"]["type"]
    out, _ = sanitize_schema(obj(t={"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}))
    assert out["properties"]["t"]["items"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert clean(obj(t={"type": "array", "prefixItems": [{"type": "string"}]}))["properties"]["t"]["items"] == {
        "type": "string"
    }
    assert clean(obj(t={"type": "array", "items": False}))["properties"]["t"]["maxItems"] == 0


def test_required_filtered_and_missing_names_exposed() -> None:
    out, w = sanitize_schema(
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "a", 3, "ghost"]}
    )
    assert out["required"] == ["a", "ghost"]
    assert "ghost" in out["properties"]
    assert any("ghost" in x for x in w)


def test_forbidden_keywords_dropped_with_warning() -> None:
    out, w = sanitize_schema(
        obj(a={"type": "string", "not": {"const": "x"}, "if": {}, "then": {}, "x-extra": 1, "examples": ["q"]})
    )
    assert out["properties"]["a"] == {"type": "string"}
    assert any("not" in x and "if" in x for x in w)
    assert not any("x-extra" in x or "examples" in x for x in w)


def test_kept_keywords_survive() -> None:
    a = {
        "type": "string",
        "minLength": 1,
        "maxLength": 5,
        "pattern": "^[a-z]+$",
        "format": "email",
        "description": "d",
        "title": "T",
        "default": "ab",
    }
    n = {"type": "integer", "minimum": 0, "maximum": 10, "multipleOf": 2}
    assert clean(obj(a=a, n=n)) == obj(a=a, n=n)


def test_draft4_exclusive_minimum() -> None:
    assert clean(obj(n={"type": "number", "minimum": 3, "exclusiveMinimum": True}))["properties"]["n"] == {
        "type": "number",
        "exclusiveMinimum": 3,
    }


def test_openapi_nullable() -> None:
    assert clean(obj(n={"type": "string", "nullable": True}))["properties"]["n"] == {"type": ["string", "null"]}


def test_enum_values_of_wrong_type_dropped() -> None:
    assert clean(obj(a={"type": "string", "enum": ["x", 1, {"o": 1}, "x"]}))["properties"]["a"] == {
        "type": "string",
        "enum": ["x"],
    }
    assert clean(obj(a={"type": "integer", "enum": [True, 2]}))["properties"]["a"] == {"type": "integer", "enum": [2]}
    assert clean(obj(a={"type": "string", "enum": [1, 2]}))["properties"]["a"] == {"type": "integer", "enum": [1, 2]}


def test_bad_pattern_and_unknown_format_dropped() -> None:
    assert clean(obj(a={"type": "string", "pattern": "(", "format": "color"}))["properties"]["a"] == {"type": "string"}


def test_top_level_anyof_of_objects_flattens() -> None:
    s = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"a": {"type": "string"}, "c": {"type": "string"}},
                "required": ["a", "c"],
            },
            {"type": "object", "properties": {"b": {"type": "integer"}, "c": {"type": "integer"}}, "required": ["c"]},
        ]
    }
    out = clean(s)
    assert set(out["properties"]) == {"a", "b", "c"}
    assert out["required"] == ["c"]
    assert out["properties"]["c"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}


def test_typical_pydantic_schema_untouched() -> None:
    s = {
        "type": "object",
        "title": "addArguments",
        "properties": {"a": {"type": "integer", "title": "A"}, "b": {"type": "integer", "title": "B"}},
        "required": ["a", "b"],
    }
    out, w = sanitize_schema(s)
    assert out == s and w == [] and out is not s


def test_zod_style_schema_keeps_additional_properties() -> None:
    s = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
        "additionalProperties": False,
    }
    out, w = sanitize_schema(s)
    assert out == {
        "type": "object",
        "properties": {"q": {"type": "string"}},
        "required": ["q"],
        "additionalProperties": False,
    }
    assert w == []


def test_input_not_mutated() -> None:
    s = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"allOf": [{"type": "string"}, {"minLength": 1}]}},
        "$defs": {"A": {"const": 1}},
    }
    before = copy.deepcopy(s)
    clean(s)
    assert s == before


# ---------------------------------------------------------------------------------------------
# the checker itself


def test_checker_rejects_what_the_api_rejects() -> None:
    assert openai_schema_problems([]) != []
    assert openai_schema_problems({"type": "string"}) != []
    assert openai_schema_problems({"type": "object"}) != []
    assert openai_schema_problems(obj(a={"type": "array"})) != []
    assert openai_schema_problems(obj(a={"$ref": "#/x"})) != []
    assert openai_schema_problems(obj(a={"description": "no type"})) != []
    assert openai_schema_problems({**obj(a={"type": "string"}), "required": ["b"]}) != []
    assert openai_schema_problems(obj(a={"type": "string", "enum": []})) != []
    assert openai_schema_problems(obj(a={"type": "string", "enum": [[1]]})) != []
    assert openai_schema_problems(obj(a={"type": "number", "minimum": math.nan})) != []
    assert openai_schema_problems(obj(a={"type": "strin"})) != []
    assert openai_schema_problems(obj(a={"anyOf": []})) != []
    assert openai_schema_problems(obj(a={"type": "string", "oneOf": [{"type": "string"}]})) != []
    assert openai_schema_problems(obj(a={"type": "string"})) == []


# ---------------------------------------------------------------------------------------------
# strict mode


def test_strict_only_when_meaning_is_kept() -> None:
    closed = {
        "type": "object",
        "properties": {"a": {"type": "string", "title": "A"}, "b": {"type": "array", "items": {"type": "integer"}}},
        "required": ["a", "b"],
    }
    assert make_strict(closed) == {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "array", "items": {"type": "integer"}}},
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    assert make_strict({**closed, "required": ["a"]}) is None  # an optional field
    assert make_strict({**closed, "additionalProperties": True}) is None
    assert make_strict(obj(m={"type": "object"})) is None  # open map
    assert make_strict(
        {"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}, "required": ["a"]}
    ) is None
    assert make_strict({"type": "object", "properties": {"a": {"$ref": "#/x"}}, "required": ["a"]}) is None


# ---------------------------------------------------------------------------------------------
# definition hash


def test_definition_hash_stable_and_sensitive() -> None:
    s1 = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
    s2 = {"properties": {"b": {"type": "integer"}, "a": {"type": "string"}}, "type": "object"}
    ann = ToolAnnotations(read_only_hint=True)
    h = definition_hash("d", s1, ann)
    assert h == definition_hash("d", s2, ToolAnnotations(read_only_hint=True))
    assert len(h) == 16 and int(h, 16) >= 0
    assert h != definition_hash("d ", s1, ann)
    assert h != definition_hash("d", s1, ToolAnnotations(read_only_hint=False))
    assert h != definition_hash("d", {**s1, "required": ["a"]}, ann)
    cyc: dict = {}
    cyc["x"] = cyc
    assert definition_hash(None, cyc, None) == definition_hash(None, cyc, None)
    assert definition_hash(None, {1: "a", "b": 2}, {"x": math.nan})


def test_definition_hash_pinned() -> None:
    """Remembered approvals survive restarts only if the hash never changes across versions."""
    assert definition_hash("Add numbers", {"type": "object"}, None) == definition_hash(
        "Add numbers", {"type": "object"}, None
    )
    import hashlib

    canon = json.dumps(
        {"annotations": None, "description": "Add numbers", "input_schema": {"type": "object"}},
        sort_keys=True,
        separators=(",", ":"),
    )
    assert definition_hash("Add numbers", {"type": "object"}, None) == hashlib.sha256(canon.encode()).hexdigest()[:16]
