"""The form model of an elicitation: what is asked, and the answer (DESIGN §6).

A ``requestedSchema`` is a flat object of primitives. ``elicitation_fields`` turns it into a
list of ``FormField``s that core, the notebook widgets and the text renderer all read;
``ElicitOutcome`` is the answer. Pure, and never trusts the schema's shape.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, Field

from nbagent.protocol._base import ProtocolModel

FieldKind = Literal["string", "email", "uri", "date", "date-time", "integer", "number", "boolean", "enum", "multi_enum"]
_FORMAT_KINDS: dict[str, FieldKind] = {"email": "email", "uri": "uri", "date": "date", "date-time": "date-time"}


class ElicitationSchemaError(ValueError):
    """The requested schema is not a flat object of primitives, so no form can be built."""


class ElicitOutcome(ProtocolModel):
    """The user's (or policy's) answer to one elicitation request."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


class FormField(BaseModel):
    """One input of an elicitation form."""

    name: str
    kind: FieldKind
    title: str | None = None
    description: str | None = None
    required: bool = False
    default: Any = None
    min_length: int | None = None
    max_length: int | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    min_items: int | None = None
    max_items: int | None = None
    options: list[tuple[Any, str]] = Field(default_factory=list)
    """``(value, label)`` pairs for ``enum`` and ``multi_enum``."""
    unanswerable: str | None = None
    """Why no value can be given (its bounds cross): an optional field the person can only
    leave empty. A required one makes the whole form an ``ElicitationSchemaError``."""

    @property
    def label(self) -> str:
        return self.title or self.name

    @property
    def values(self) -> list[Any]:
        return [v for v, _ in self.options]


def _int_or_none(schema: dict[str, Any], key: str, where: str) -> int | None:
    v = schema.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v != int(v) or v < 0:
        raise ElicitationSchemaError(f"{where}: {key} must be a non-negative integer, got {v!r}")
    return int(v)


def _num_or_none(schema: dict[str, Any], key: str, where: str) -> int | float | None:
    v = schema.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ElicitationSchemaError(f"{where}: {key} must be a number, got {v!r}")
    return v


def _str_or_none(schema: dict[str, Any], key: str) -> str | None:
    v = schema.get(key)
    return v if isinstance(v, str) else None


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, bool, int)) or (isinstance(v, float) and math.isfinite(v))


def _titled_options(branches: Any, where: str) -> list[tuple[Any, str]]:
    if not isinstance(branches, list) or not branches:
        raise ElicitationSchemaError(f"{where}: options must be a non-empty list of {{const, title}}")
    out: list[tuple[Any, str]] = []
    for b in branches:
        if not isinstance(b, dict) or "const" not in b or not _is_scalar(b["const"]):
            raise ElicitationSchemaError(f"{where}: each option must be an object with a scalar 'const'")
        title = b.get("title")
        out.append((b["const"], title if isinstance(title, str) else str(b["const"])))
    return out


def _enum_options(enum: Any, names: Any, where: str) -> list[tuple[Any, str]]:
    if not isinstance(enum, list) or not enum or not all(_is_scalar(v) for v in enum):
        raise ElicitationSchemaError(f"{where}: enum must be a non-empty list of scalars")
    if names is not None:
        if not isinstance(names, list) or len(names) != len(enum) or not all(isinstance(n, str) for n in names):
            raise ElicitationSchemaError(f"{where}: enumNames must be a list of strings as long as enum")
        return list(zip(enum, names, strict=True))
    return [(v, str(v)) for v in enum]


def _ordered(low: float | None, high: float | None, names: tuple[str, str], where: str) -> None:
    """A lower bound above its upper bound leaves no answer at all: no form can be shown."""
    if low is not None and high is not None and low > high:
        raise ElicitationSchemaError(
            f"{where}: {names[0]} {low!r} is above the {names[1]} {high!r}, so no value can satisfy it"
        )


def _satisfiable(f: FormField, where: str) -> FormField:
    """``f`` unless its constraints together rule out every answer (a form would be shown that
    nothing typed into it could ever send)."""
    if f.kind in ("integer", "number"):
        _ordered(f.minimum, f.maximum, ("minimum", "maximum"), where)
        integer, low, high = f.kind == "integer", f.minimum, f.maximum
        if integer and low is not None and high is not None and math.ceil(low) > math.floor(high):
            raise ElicitationSchemaError(
                f"{where}: no integer lies between the minimum {low!r} and the maximum {high!r}"
            )
    elif f.kind == "multi_enum":
        _ordered(f.min_items, f.max_items, ("minItems", "maxItems"), where)
        if f.min_items is not None and f.min_items > len(f.options):
            raise ElicitationSchemaError(
                f"{where}: minItems {f.min_items} asks for more choices than there are options (only {len(f.options)})"
            )
    elif f.kind != "enum" and f.kind != "boolean":
        _ordered(f.min_length, f.max_length, ("minLength", "maxLength"), where)
    return f


def _field(name: str, prop: Any, required: bool) -> FormField:
    """A field no value can satisfy fails the form when it is required; an optional one is kept,
    marked ``unanswerable``: leaving it empty is still an answer."""
    f = _read_field(name, prop, required)
    try:
        return _satisfiable(f, f"field {name!r}")
    except ElicitationSchemaError as exc:
        if required:
            raise
        return f.model_copy(update={"unanswerable": str(exc).removeprefix(f"field {name!r}: ")})


def _read_field(name: str, prop: Any, required: bool) -> FormField:
    where = f"field {name!r}"
    if not isinstance(prop, dict):
        raise ElicitationSchemaError(f"{where}: schema must be an object, got {type(prop).__name__}")
    typ = prop.get("type")
    if typ is None:  # tolerate a missing type when the shape says what it is
        if "enum" in prop or "oneOf" in prop:
            typ = "string"
        elif "items" in prop:
            typ = "array"
    common: dict[str, Any] = {
        "name": name,
        "title": _str_or_none(prop, "title"),
        "description": _str_or_none(prop, "description"),
        "required": required,
        "default": prop.get("default"),
    }
    if typ == "string":
        if "enum" in prop:
            return FormField(kind="enum", options=_enum_options(prop["enum"], prop.get("enumNames"), where), **common)
        if "oneOf" in prop or "anyOf" in prop:
            branches = prop.get("oneOf", prop.get("anyOf"))
            return FormField(kind="enum", options=_titled_options(branches, where), **common)
        fmt = prop.get("format")
        kind: FieldKind = "string"
        if fmt is not None:
            if not isinstance(fmt, str) or fmt not in _FORMAT_KINDS:
                raise ElicitationSchemaError(f"{where}: unsupported string format {fmt!r}")
            kind = _FORMAT_KINDS[fmt]
        return FormField(
            kind=kind,
            min_length=_int_or_none(prop, "minLength", where),
            max_length=_int_or_none(prop, "maxLength", where),
            **common,
        )
    if typ in ("integer", "number"):
        return FormField(
            kind="integer" if typ == "integer" else "number",
            minimum=_num_or_none(prop, "minimum", where),
            maximum=_num_or_none(prop, "maximum", where),
            **common,
        )
    if typ == "boolean":
        return FormField(kind="boolean", **common)
    if typ == "array":
        items = prop.get("items")
        if not isinstance(items, dict):
            raise ElicitationSchemaError(f"{where}: a multi-select needs 'items' with enum or anyOf")
        if "enum" in items:
            options = _enum_options(items["enum"], items.get("enumNames"), where)
        elif "anyOf" in items or "oneOf" in items:
            options = _titled_options(items.get("anyOf", items.get("oneOf")), where)
        else:
            raise ElicitationSchemaError(
                f"{where}: arrays are only supported as multi-select (items.enum / items.anyOf)"
            )
        return FormField(
            kind="multi_enum",
            options=options,
            min_items=_int_or_none(prop, "minItems", where),
            max_items=_int_or_none(prop, "maxItems", where),
            **common,
        )
    if typ == "object":
        raise ElicitationSchemaError(f"{where}: nested objects are not allowed in an elicitation form")
    raise ElicitationSchemaError(f"{where}: unsupported type {typ!r}")


def elicitation_fields(requested_schema: dict[str, Any]) -> list[FormField]:
    """The form to show for ``requestedSchema``, in the schema's property order."""
    if not isinstance(requested_schema, dict):
        raise ElicitationSchemaError("requestedSchema must be a JSON object")
    if requested_schema.get("type", "object") != "object":
        raise ElicitationSchemaError(f"requestedSchema must have type 'object', got {requested_schema.get('type')!r}")
    props = requested_schema.get("properties", {})
    if not isinstance(props, dict):
        raise ElicitationSchemaError("requestedSchema.properties must be an object")
    required = requested_schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise ElicitationSchemaError("requestedSchema.required must be a list of names")
    unknown = [r for r in required if r not in props]
    if unknown:
        raise ElicitationSchemaError(f"requestedSchema.required names unknown fields: {', '.join(map(repr, unknown))}")
    fields = []
    for name, prop in props.items():
        if not isinstance(name, str):
            raise ElicitationSchemaError(f"field name {name!r} is not a string")
        fields.append(_field(name, prop, name in required))
    return fields
