"""Elicitation forms: fields for every primitive, and each kind of invalid answer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbagent.mcp.elicitation import apply_defaults, validate_content
from nbagent.protocol.elicitation import ElicitationSchemaError, ElicitOutcome, elicitation_fields

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {
            "type": "string",
            "title": "Name",
            "description": "Your name",
            "minLength": 2,
            "maxLength": 5,
            "default": "Al",
        },
        "email": {"type": "string", "format": "email"},
        "site": {"type": "string", "format": "uri"},
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "date-time"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "score": {"type": "number", "minimum": 0.5, "maximum": 1.5},
        "ok": {"type": "boolean", "default": False},
        "color": {"type": "string", "enum": ["r", "g"]},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
        "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["Alpha", "Beta"]},
        "tags": {
            "type": "array",
            "items": {"type": "string", "enum": ["x", "y", "z"]},
            "minItems": 1,
            "maxItems": 2,
            "default": ["x"],
        },
        "titled": {
            "type": "array",
            "items": {"anyOf": [{"const": "p", "title": "Pea"}, {"const": "q", "title": "Queue"}]},
        },
    },
    "required": ["name", "age"],
}


def fields():
    return {f.name: f for f in elicitation_fields(SCHEMA)}


def test_fields_for_every_kind_in_order() -> None:
    fs = elicitation_fields(SCHEMA)
    assert [f.name for f in fs] == list(SCHEMA["properties"])
    kinds = {f.name: f.kind for f in fs}
    assert kinds == {
        "name": "string", "email": "email", "site": "uri", "day": "date", "at": "date-time",
        "age": "integer", "score": "number", "ok": "boolean", "color": "enum", "size": "enum",
        "legacy": "enum", "tags": "multi_enum", "titled": "multi_enum",
    }  # fmt: skip


def test_field_details() -> None:
    f = fields()
    n = f["name"]
    assert (n.title, n.description, n.required, n.default, n.min_length, n.max_length, n.label) == (
        "Name",
        "Your name",
        True,
        "Al",
        2,
        5,
        "Name",
    )
    assert f["email"].label == "email" and not f["email"].required
    assert (f["age"].minimum, f["age"].maximum, f["age"].required) == (0, 150, True)
    assert isinstance(f["age"].minimum, int)
    assert (f["score"].minimum, f["score"].maximum) == (0.5, 1.5)
    assert f["ok"].default is False
    assert f["color"].options == [("r", "r"), ("g", "g")]
    assert f["size"].options == [("s", "Small"), ("l", "Large")]
    assert f["legacy"].options == [("a", "Alpha"), ("b", "Beta")]
    assert (f["tags"].options, f["tags"].min_items, f["tags"].max_items, f["tags"].default) == (
        [("x", "x"), ("y", "y"), ("z", "z")],
        1,
        2,
        ["x"],
    )
    assert f["titled"].options == [("p", "Pea"), ("q", "Queue")]


@pytest.mark.parametrize(
    "schema, needle",
    [
        ([], "JSON object"),
        ({"type": "array"}, "type 'object'"),
        ({"type": "object", "properties": {"o": {"type": "object", "properties": {}}}}, "nested objects"),
        ({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "string"}}}}, "multi-select"),
        ({"type": "object", "properties": {"l": {"type": "array"}}}, "multi-select"),
        ({"type": "object", "properties": {"x": {"type": "nope"}}}, "unsupported type"),
        ({"type": "object", "properties": {"x": "string"}}, "must be an object"),
        ({"type": "object", "properties": {"x": {"type": "string", "format": "color"}}}, "format"),
        ({"type": "object", "properties": {"x": {"type": "string", "enum": []}}}, "enum"),
        (
            {"type": "object", "properties": {"x": {"type": "string", "enum": ["a"], "enumNames": ["A", "B"]}}},
            "enumNames",
        ),
        ({"type": "object", "properties": {"x": {"type": "string", "oneOf": [{"title": "no const"}]}}}, "const"),
        ({"type": "object", "properties": {"x": {"type": "string", "minLength": -1}}}, "minLength"),
        ({"type": "object", "properties": {"x": {"type": "integer", "minimum": "0"}}}, "minimum"),
        ({"type": "object", "properties": {}, "required": ["ghost"]}, "ghost"),
        ({"type": "object", "properties": []}, "properties"),
    ],
)
def test_schemas_that_are_not_flat_forms_raise_clearly(schema, needle) -> None:
    with pytest.raises(ElicitationSchemaError, match=needle):
        elicitation_fields(schema)


def test_valid_content_has_no_problems() -> None:
    content = {
        "name": "Ann", "email": "ann@example.com", "site": "https://example.com/x", "day": "2026-02-28",
        "at": "2026-02-28T10:00:00Z", "age": 30, "score": 1, "ok": True, "color": "g", "size": "l",
        "legacy": "b", "tags": ["x", "z"], "titled": [],
    }  # fmt: skip
    assert validate_content(SCHEMA, content) == []
    assert validate_content(SCHEMA, {"name": "Ann", "age": 30.0}) == []  # 30.0 is an integer in JSON Schema
    assert validate_content(SCHEMA, {"name": "Ann", "age": 1, "at": "2026-02-28T10:00:00.5+05:30"}) == []


def problems(**content) -> list[str]:
    return validate_content(SCHEMA, {"name": "Ann", "age": 1, **content})


@pytest.mark.parametrize(
    "content, needle",
    [
        ({"name": None}, "'name': required"),
        ({"age": True}, "'age': expected an integer"),
        ({"age": 1.5}, "'age': expected an integer"),
        ({"age": "3"}, "'age': expected an integer"),
        ({"score": False}, "'score': expected a number"),
        ({"score": float("nan")}, "'score': expected a number"),
        ({"name": 5}, "'name': expected a string"),
        ({"ok": "yes"}, "'ok': expected true or false"),
        ({"age": -1}, "'age': -1 is below the minimum"),
        ({"age": 151}, "'age': 151 is above the maximum"),
        ({"score": 2.0}, "'score': 2.0 is above the maximum"),
        ({"name": "A"}, "'name': at least 2 characters"),
        ({"name": "Abcdef"}, "'name': at most 5 characters"),
        ({"email": "not-an-email"}, "'email': 'not-an-email' is not an email"),
        ({"email": "a b@c.d"}, "not an email"),
        ({"site": "example.com"}, "'site': 'example.com' is not a URI"),
        ({"day": "2026-02-30"}, "'day': '2026-02-30' is not a date"),
        ({"day": "26-2-3"}, "not a date"),
        ({"at": "2026-02-28T10:00:00"}, "with offset"),
        ({"at": "yesterday"}, "not an RFC 3339"),
        ({"color": "blue"}, "'color': 'blue' is not one of the options"),
        ({"size": "Small"}, "'size': 'Small' is not one of the options"),
        ({"tags": []}, "'tags': choose at least 1"),
        ({"tags": ["x", "y", "z"]}, "'tags': choose at most 2"),
        ({"tags": ["w"]}, "'tags': 'w' is not one of the options"),
        ({"tags": ["x", "x"]}, "only once"),
        ({"tags": "x"}, "'tags': expected a list"),
        ({"extra": 1}, "'extra': not in the requested schema"),
    ],
)
def test_each_kind_of_problem(content, needle) -> None:
    found = problems(**content)
    assert any(needle in p for p in found), found


def test_missing_required_fields_each_named() -> None:
    found = validate_content(SCHEMA, {})
    assert "field 'name': required" in found and "field 'age': required" in found


def test_content_not_an_object_and_bad_schema() -> None:
    assert validate_content(SCHEMA, ["x"]) == ["content must be an object, got list"]
    assert validate_content({"type": "object", "properties": {"o": {"type": "object"}}}, {})[0].startswith(
        "the server's schema"
    )


def test_enum_options_keep_bool_and_int_apart() -> None:
    s = {"type": "object", "properties": {"n": {"type": "string", "enum": [1, 2]}}}
    assert validate_content(s, {"n": True})
    assert validate_content(s, {"n": 1}) == []


def test_apply_defaults() -> None:
    out = apply_defaults(SCHEMA, {"age": 3})
    assert out == {"age": 3, "name": "Al", "ok": False, "tags": ["x"]}
    assert apply_defaults(SCHEMA, None)["name"] == "Al"
    assert apply_defaults(SCHEMA, {"name": "Bo"})["name"] == "Bo"
    assert apply_defaults({"type": "array"}, {"a": 1}) == {"a": 1}
    out["tags"].append("y")
    assert SCHEMA["properties"]["tags"]["default"] == ["x"], "defaults are copied, not shared"


def test_elicit_outcome() -> None:
    assert ElicitOutcome(action="accept", content={"a": 1}).content == {"a": 1}
    assert ElicitOutcome(action="cancel").content is None
    with pytest.raises(ValueError):
        ElicitOutcome(action="maybe")  # type: ignore[arg-type]


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=6)),
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.text(max_size=4), c, max_size=3)),
    max_leaves=12,
)
prop_schemas = st.dictionaries(
    st.sampled_from(
        [
            "type",
            "format",
            "enum",
            "enumNames",
            "oneOf",
            "anyOf",
            "items",
            "minLength",
            "maximum",
            "minItems",
            "default",
            "title",
        ]
    ),
    st.one_of(json_values, st.sampled_from(["string", "integer", "number", "boolean", "array", "email", "date"])),
    max_size=5,
)
form_schemas = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["object", "array", None]),
            "properties": st.dictionaries(st.text(max_size=4), prop_schemas, max_size=4),
        },
        optional={"required": st.one_of(json_values, st.lists(st.text(max_size=4), max_size=3))},
    ),
)


@settings(max_examples=300, deadline=None)
@given(form_schemas, json_values)
def test_hostile_schemas_and_answers_never_crash(schema, content) -> None:
    try:
        elicitation_fields(schema)
    except ElicitationSchemaError:
        pass
    found = validate_content(schema, content)
    assert isinstance(found, list) and all(isinstance(p, str) for p in found)
    apply_defaults(schema, content if isinstance(content, dict) else None)
