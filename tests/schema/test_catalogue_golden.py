"""What the catalogue exposes of each tool stays byte-for-byte what it was: the ``parameters``
(key order included), ``strict``, ``warnings`` and ``definition_hash`` of every tool built from
the benchmark's realistic servers, from the schemas the schema tests and their fuzzing hand to
the sanitiser (``catalogue_corpus.json``, recorded once), from the hostile schemas of the cache
tests and from look-alikes JSON cannot tell apart, against digests recorded before the build
was made faster (``catalogue_golden.json``).

A deferred build (a catalogue over ``max_model_tools``), each spec completed as a model request
would complete it, must expose the very same definitions.

A change meant to alter what the model sees rewrites the golden file on purpose:
``python -m tests.schema.test_catalogue_golden --write``, and says why in its commit.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from nbagent.config import McpServerConfig
from nbagent.mcp.catalog import Completer, build_catalog
from nbagent.protocol import ToolSpec
from nbagent.schema import make_strict, sanitize_schema
from tests.security.test_catalogue_cache import _hostile, _near_copy

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "catalogue_golden.json"
CORPUS = HERE / "catalogue_corpus.json"
CFG = McpServerConfig(command="true")
BENCH_TOOLS = 250
BENCH_SEEDS = (0, 1, 2)
EXAMPLES = ("bench/0/srv0000/", "corpus/7", "hostile/1")
"""Cases (or a prefix: its first match) whose output the golden file holds in full, to read."""

_spec = importlib.util.spec_from_file_location("bench_catalogue", HERE.parents[1] / "bench" / "catalogue.py")
assert _spec is not None and _spec.loader is not None
bench = sys.modules.setdefault("bench_catalogue", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(bench)


def _look_alikes() -> list[Any]:
    """Schemas whose JSON text is another's: the cache must still keep each one's own output."""
    leaf = {"type": "string", "description": "plain"}
    return [
        {"type": "object", "properties": {"e": {"type": "string", "enum": ["a", "b"]}}},
        {"type": "object", "properties": {"e": {"type": "string", "enum": ("a", "b")}}},
        {"type": "object", "properties": {"n": {"type": "number", "maximum": 1}}},
        {"type": "object", "properties": {"n": {"type": "number", "maximum": 1.0}}},
        {"type": "object", "properties": {"n": {"type": "number", "maximum": True}}},
        {"type": "object", "properties": {"a": leaf, "b": {"type": "integer"}}},
        {"type": "object", "properties": {"b": {"type": "integer"}, "a": leaf}},
        {"type": "object", "properties": {"a": {"description": "plain", "type": "string"}}},
        {"type": "object", "properties": {"a": {"type": "string", "description": "caf\u00e9 \u2014 ok"}}},
        {"type": "object", "properties": {"a": {"type": "string", "description": "lone \ud800 half"}}},
        {"type": "object", "properties": {"a": {"type": "string", "title": "\x00\x1b[31m"}}},
        {"type": "object", "properties": {"a": {"type": "string", "enum": ["\u00e9", "x"]}}},
        {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}, "maxItems": 2.0}}},
        {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3.0}}},
        {"type": "object", "properties": {"a": {"type": "string", "pattern": "\u00e9+"}}},
        {"type": "object", "properties": {"a": {"type": "integer", "default": [1]}}},
    ]


def _tools(schemas: list[Any]) -> list[types.Tool]:
    """A tool per object schema, named by its position, built without validation so tuples and
    odd values arrive as they are. A server's inputSchema is always an object: the sanitiser
    alone sees the other values."""
    return [types.Tool.model_construct(name=f"t{i:04d}", description=f"tool {i}", input_schema=s, annotations=None)
            for i, s in enumerate(schemas) if isinstance(s, dict)]  # fmt: skip


def _exposed(spec: ToolSpec) -> tuple[Any, ...]:
    return spec.parameters, spec.strict, spec.warnings, spec.definition_hash


def _digest(value: Any) -> str:
    """``repr`` keeps what JSON would lose: key order, tuple vs list, 1 vs 1.0 vs True."""
    return hashlib.sha256(repr(value).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _built(servers: Any, defer: bool) -> list[ToolSpec]:
    specs, _ = build_catalog(servers, defer=defer)
    if not defer:
        return specs
    assert all(spec.deferred for spec in specs), "a first deferred build sanitised a schema"
    completer = Completer()
    return [completer.complete(spec) for spec in specs]


def _cases(defer: bool = False) -> dict[str, Any]:
    """Every case's exposed output, by a name that says where it came from."""
    out: dict[str, Any] = {}
    for seed in BENCH_SEEDS:
        servers = bench._as_sdk(bench.realistic_servers(BENCH_TOOLS, seed))
        for spec in _built(servers, defer):
            out[f"bench/{seed}/{spec.server}/{spec.raw_name}"] = _exposed(spec)
    corpus = json.loads(CORPUS.read_text())
    sanitised = [s for kind, s in corpus if kind == "sanitize"]
    groups = {"corpus": sanitised, "hostile": _hostile() + [_near_copy(s) for s in _hostile()],
              "alike": _look_alikes()}  # fmt: skip
    for group, schemas in groups.items():
        # The same tools twice, on two servers, so the second server's come from the cache.
        specs = _built({"a": (CFG, _tools(schemas)), "b": (CFG, _tools(copy.deepcopy(schemas)))}, defer)
        for spec in specs:
            out[f"{group}/{int(spec.raw_name[1:])}/{spec.server}"] = _exposed(spec)
        for i, schema in enumerate(schemas):
            parameters, warnings = sanitize_schema(schema)
            out[f"{group}/{i}/sanitize"] = (parameters, warnings, make_strict(parameters, sanitised=True))
    for i, (kind, schema) in enumerate(corpus):
        if kind == "strict":
            out[f"strict/{i}"] = make_strict(schema)
    return out


def _golden_from(cases: dict[str, Any]) -> dict[str, Any]:
    examples = {}
    for prefix in EXAMPLES:
        name = next(n for n in cases if n.startswith(prefix))
        examples[name] = json.loads(json.dumps(cases[name]))
    return {"digests": {name: _digest(value) for name, value in cases.items()}, "examples": examples}


@pytest.mark.parametrize("defer", [False, True], ids=["built", "deferred-then-completed"])
def test_every_exposed_tool_definition_is_what_it_was(defer: bool) -> None:
    golden = json.loads(GOLDEN.read_text())
    cases = _cases(defer)
    assert set(cases) == set(golden["digests"]), "the set of cases changed: rewrite the golden file on purpose"
    changed = sorted(name for name, value in cases.items() if _digest(value) != golden["digests"][name])
    assert not changed, f"{len(changed)} tool definitions changed, e.g. {changed[:5]}"
    for name, value in golden["examples"].items():
        assert json.loads(json.dumps(cases[name])) == value, name


def test_the_golden_file_covers_what_it_claims() -> None:
    """Enough tools of every source, and the cache's second copies, so a drift cannot hide."""
    names = json.loads(GOLDEN.read_text())["digests"]
    assert sum(n.startswith("bench/") for n in names) == BENCH_TOOLS * len(BENCH_SEEDS)
    assert sum(n.startswith("corpus/") and n.endswith("/b") for n in names) > 500
    assert sum(n.startswith("strict/") for n in names) > 10
    assert sum(n.startswith("alike/") and n.endswith("/b") for n in names) == len(_look_alikes())


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m tests.schema.test_catalogue_golden --write")
    GOLDEN.write_text(json.dumps(_golden_from(_cases()), indent=0, ensure_ascii=True) + "\n")
