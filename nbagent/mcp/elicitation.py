"""Form-mode elicitation: what to ask, and whether an answer may be sent (DESIGN §6).

A server's ``requestedSchema`` is a flat object of primitives. ``elicitation_fields`` turns it
into a list of ``FormField``s the notebook renders as widgets; ``validate_content`` checks an
answer before it is sent, so a bad answer is refused with a reason instead of reaching the
server. Everything here is pure and never trusts the schema's shape.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from nbagent.protocol._base import ProtocolModel

FieldKind = Literal["string", "email", "uri", "date", "date-time", "integer", "number", "boolean", "enum", "multi_enum"]
_FORMAT_KINDS = {"email": "email", "uri": "uri", "date": "date", "date-time": "date-time"}


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

    @property
    def label(self) -> str:
        return self.title or self.name

    @property
    def values(self) -> list[Any]:
        return [v for v, _ in self.options]


# ---------------------------------------------------------------------------------------------
# schema -> fields


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
        return list(zip(enum, names))
    return [(v, str(v)) for v in enum]


def _field(name: str, prop: Any, required: bool) -> FormField:
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
        kind = "string"
        if fmt is not None:
            if not isinstance(fmt, str) or fmt not in _FORMAT_KINDS:
                raise ElicitationSchemaError(f"{where}: unsupported string format {fmt!r}")
            kind = _FORMAT_KINDS[fmt]
        return FormField(
            kind=kind,  # type: ignore[arg-type]
            min_length=_int_or_none(prop, "minLength", where),
            max_length=_int_or_none(prop, "maxLength", where),
            **common,
        )
    if typ in ("integer", "number"):
        return FormField(
            kind=typ,
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


# ---------------------------------------------------------------------------------------------
# validating an answer

_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")
_URI_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2}(?:\.\d+)?)([Zz]|[+-]\d{2}:\d{2})$")


def _is_int(v: Any) -> bool:
    """JSON Schema integers: ``3`` and ``3.0`` are, ``True`` is not."""
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and math.isfinite(v) and v.is_integer())


def _is_number(v: Any) -> bool:
    return not isinstance(v, bool) and (isinstance(v, int) or (isinstance(v, float) and math.isfinite(v)))


def _format_problem(kind: str, value: str) -> str | None:
    if kind == "email" and not _EMAIL_RE.fullmatch(value):
        return "is not an email address"
    if kind == "uri" and not _URI_RE.fullmatch(value):
        return "is not a URI (expected scheme:rest)"
    if kind == "date":
        try:
            if not _DATE_RE.fullmatch(value):
                raise ValueError
            _dt.date.fromisoformat(value)
        except ValueError:
            return "is not a date (YYYY-MM-DD)"
    if kind == "date-time":
        m = _DATETIME_RE.fullmatch(value)
        try:
            if not m:
                raise ValueError
            _dt.datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}{'+00:00' if m.group(3) in 'Zz' else m.group(3)}")
        except ValueError:
            return "is not an RFC 3339 date-time with offset (YYYY-MM-DDTHH:MM:SS+00:00)"
    return None


def _same(a: Any, b: Any) -> bool:
    """Option equality that keeps ``True`` and ``1`` apart."""
    return type(a) is type(b) and a == b or (_is_number(a) and _is_number(b) and a == b)


def _field_problems(f: FormField, v: Any) -> list[str]:
    where = f"field {f.name!r}"
    if f.kind in ("string", "email", "uri", "date", "date-time"):
        if not isinstance(v, str):
            return [f"{where}: expected a string, got {type(v).__name__}"]
        problems = []
        if f.min_length is not None and len(v) < f.min_length:
            problems.append(f"{where}: at least {f.min_length} characters required, got {len(v)}")
        if f.max_length is not None and len(v) > f.max_length:
            problems.append(f"{where}: at most {f.max_length} characters allowed, got {len(v)}")
        fp = _format_problem(f.kind, v)
        if fp:
            problems.append(f"{where}: {v!r} {fp}")
        return problems
    if f.kind in ("integer", "number"):
        ok = _is_int(v) if f.kind == "integer" else _is_number(v)
        if not ok:
            return [f"{where}: expected {'an integer' if f.kind == 'integer' else 'a number'}, got {v!r}"]
        problems = []
        if f.minimum is not None and v < f.minimum:
            problems.append(f"{where}: {v!r} is below the minimum {f.minimum!r}")
        if f.maximum is not None and v > f.maximum:
            problems.append(f"{where}: {v!r} is above the maximum {f.maximum!r}")
        return problems
    if f.kind == "boolean":
        return [] if isinstance(v, bool) else [f"{where}: expected true or false, got {v!r}"]
    if f.kind == "enum":
        if not any(_same(v, o) for o in f.values):
            return [f"{where}: {v!r} is not one of the options {f.values!r}"]
        return []
    # multi_enum
    if not isinstance(v, list):
        return [f"{where}: expected a list of options, got {type(v).__name__}"]
    problems = [
        f"{where}: {x!r} is not one of the options {f.values!r}" for x in v if not any(_same(x, o) for o in f.values)
    ]
    if len({repr(x) for x in v}) != len(v):
        problems.append(f"{where}: options may be chosen only once")
    if f.min_items is not None and len(v) < f.min_items:
        problems.append(f"{where}: choose at least {f.min_items}, got {len(v)}")
    if f.max_items is not None and len(v) > f.max_items:
        problems.append(f"{where}: choose at most {f.max_items}, got {len(v)}")
    return problems


def validate_content(requested_schema: dict[str, Any], content: Any) -> list[str]:
    """Everything wrong with ``content`` as an answer to ``requestedSchema``; empty when valid."""
    try:
        fields = elicitation_fields(requested_schema)
    except ElicitationSchemaError as e:
        return [f"the server's schema cannot be answered: {e}"]
    if content is None:
        content = {}
    if not isinstance(content, dict):
        return [f"content must be an object, got {type(content).__name__}"]
    by_name = {f.name: f for f in fields}
    problems = [f"field {k!r}: not in the requested schema" for k in content if k not in by_name]
    for f in fields:
        if f.name not in content or content[f.name] is None:
            if f.required:
                problems.append(f"field {f.name!r}: required")
            continue
        problems.extend(_field_problems(f, content[f.name]))
    return problems


def apply_defaults(requested_schema: dict[str, Any], content: dict[str, Any] | None) -> dict[str, Any]:
    """``content`` with schema defaults filled in for absent fields (a new dict; never raises)."""
    out = dict(content or {})
    try:
        fields = elicitation_fields(requested_schema)
    except ElicitationSchemaError:
        return out
    for f in fields:
        if out.get(f.name) is None and f.default is not None:
            out[f.name] = list(f.default) if isinstance(f.default, list) else f.default
    return out
