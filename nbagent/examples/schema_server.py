"""A real MCP server with one rich input schema, for the schema-exposure walkthrough.

``book_trip`` sends the JSON Schema a real server might: ``$defs`` and ``$ref``, an enum, a
``const``, string formats (one the model API knows, one it does not), ``oneOf``, ``allOf``,
``nullable``, tuple ``prefixItems``, ``patternProperties``, ``not`` and annotations such as
``examples``. ``lookup_city`` sends a schema that is already strict-compatible (every property
required, no extra keys). Like a careful real server it checks arguments against its own
schema and refuses those that fail; every call is recorded as the identity server records them
(``--record``), so the walkthrough shows the arguments exactly as the server received them.

Run: ``python -m nbagent.examples.schema_server [--record FILE]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import mcp_types as types

from nbagent.examples.identity_server import recording_server, serve_stdio

BOOK_TRIP: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "traveller": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "email": {"type": "string", "format": "email"},
                "age": {"type": "integer", "minimum": 0, "exclusiveMaximum": 130},
            },
            "required": ["name", "email"],
            "additionalProperties": False,
        }
    },
    "properties": {
        "traveller": {"$ref": "#/$defs/traveller", "description": "Who travels."},
        "companions": {"type": "array", "items": {"$ref": "#/$defs/traveller"}, "maxItems": 4, "uniqueItems": True},
        "cabin": {"enum": ["economy", "business", "first"], "default": "economy"},
        "currency": {"const": "EUR"},
        "depart": {"type": "string", "format": "date", "examples": ["2027-03-14"]},
        "seat": {"oneOf": [{"type": "string", "pattern": "^[0-9]{1,2}[A-F]$"}, {"type": "null"}]},
        "payment": {
            "oneOf": [
                {"type": "object", "properties": {"card": {"type": "string", "pattern": "^[0-9]{16}$"}}, "required": ["card"]},
                {"type": "object", "properties": {"iban": {"type": "string"}}, "required": ["iban"]},
            ]
        },
        "notes": {"type": "string", "nullable": True, "format": "markdown"},
        "legs": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "string"}]},
        "extras": {"type": "object", "patternProperties": {"^x-": {"type": "string"}}},
        "budget": {"allOf": [{"type": "number", "minimum": 0}, {"maximum": 10000}]},
        "flexible": {"type": "boolean", "not": {"const": False}},
    },
    "required": ["traveller", "depart", "cabin"],
}

LOOKUP_CITY: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "City name"},
        "country": {"type": "string", "enum": ["FR", "DE", "IT"]},
    },
    "required": ["city", "country"],
    "additionalProperties": False,
}

TOOLS = [
    types.Tool(name="book_trip", title="Book a trip", description="Book a trip for a traveller.", input_schema=BOOK_TRIP),
    types.Tool(name="lookup_city", title="Look up a city", description="Find a city's airport.", input_schema=LOOKUP_CITY),
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m nbagent.examples.schema_server", description=__doc__)
    parser.add_argument("--record", help="JSONL file each call is appended to")
    args = parser.parse_args(argv)
    serve_stdio(recording_server("schema", TOOLS, Path(args.record) if args.record else None, validate=True))


if __name__ == "__main__":
    main()
