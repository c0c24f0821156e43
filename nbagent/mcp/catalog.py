"""Turn the servers' raw tool lists into the model-visible catalogue (DESIGN §3, §4).

Names come from ``identity.qualify_tools`` over every ready server at once, so collisions across
servers resolve the same way regardless of start order. A ``CatalogBuilder`` keeps what it built:
a server whose tools did not change keeps its ``ToolSpec`` objects, and a schema is sanitised
once however many tools (of any server) send exactly that schema. A tool whose name holds a
secret is left out with a warning: a name goes to the model provider as it is (calls are routed
by it), so unlike a description it cannot be redacted. It does no I/O and touches no event loop,
so the manager runs it in a worker thread.
"""

from __future__ import annotations

import hashlib
import marshal
import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from nbagent.config import McpServerConfig
from nbagent.gcpause import gc_paused
from nbagent.mcp.convert import annotations_from_mcp
from nbagent.mcp.identity import Qualified, qualify_tools
from nbagent.protocol import ToolSpec
from nbagent.schema import canonical_bytes, definition_hash, make_strict, sanitize_schema
from nbagent.secrets import Redactor

_YIELD_EVERY = 50
"""Tools built between two offers of the GIL. A build runs in a worker thread, but a waiting
event loop got the GIL back only after stretches of 60-80 ms (50,000 tools, idle machine);
offering it every 50 tools (~5 ms) leaves stalls of ~20 ms, at no measurable cost."""

ServerTools = tuple[Hashable, McpServerConfig, list[types.Tool]]
"""One server's input to a build: a key that changes whenever its tools or config do (the
manager uses the connection's generation), its config, and its tools as listed."""


@dataclass
class _Sanitised:
    """One distinct input schema and what the model sees of it."""

    schema: dict[str, Any]
    """The first schema seen with this content, to check a later one's key order against."""
    parameters: dict[str, Any]
    warnings: tuple[str, ...]
    strict: bool
    exact: bytes | None = None
    """``_exact(schema)``, taken when a second schema with the same canonical JSON arrives."""


@dataclass
class _Server:
    key: Hashable
    specs: list[ToolSpec]
    """Sorted by raw name; ``name`` is the visible name from the last qualification."""
    schemas: list[bytes]
    """Digests of the schemas its tools use (what keeps their cache entries alive)."""


class CatalogBuilder:
    """Builds catalogues one after another, reusing what did not change. Not thread-safe: one
    build at a time (the manager serialises them)."""

    def __init__(self) -> None:
        self._servers: dict[str, _Server] = {}
        self._schemas: dict[bytes, _Sanitised] = {}
        self._idents: frozenset[tuple[str, str]] = frozenset()
        self._names = Qualified()

    def build(
        self, servers: Mapping[str, ServerTools], *, defer: bool = False, secrets: Mapping[str, str] | None = None
    ) -> tuple[list[ToolSpec], list[str]]:
        """ToolSpecs for every enabled tool of the given (ready) servers, plus warnings to show;
        ``defer``: a schema not sanitised before is left for ``Completer`` (``spec.deferred``);
        ``secrets``: every secret held -> what it is (``secret_sources``), which no tool's name
        may hold."""
        with gc_paused():
            return self._build(servers, defer, secrets or {})

    def _build(
        self, servers: Mapping[str, ServerTools], defer: bool, secrets: Mapping[str, str]
    ) -> tuple[list[ToolSpec], list[str]]:
        kept: dict[str, _Server] = {}
        changed: dict[str, tuple[Hashable, McpServerConfig, dict[str, types.Tool]]] = {}
        named = Redactor(secrets)
        refused: list[str] = []
        for server in sorted(servers):
            key, cfg, tools = servers[server]
            entry = self._servers.get(server)
            if entry is not None and entry.key == key:
                kept[server] = entry
            else:
                chosen: dict[str, types.Tool] = {}
                for tool in tools:
                    if not cfg.tool_enabled(tool.name):
                        continue
                    if (secret := named.find(tool.name)) is not None:
                        refused.append(
                            f"MCP server {server!r} lists a tool whose name holds a secret ({secrets[secret]}); "
                            "left out: a tool's name is sent to the model provider as it is"
                        )
                        continue
                    chosen.setdefault(tool.name, tool)
                changed[server] = (key, cfg, chosen)
        idents = frozenset(
            [(server, spec.raw_name) for server, entry in kept.items() for spec in entry.specs]
            + [(server, raw) for server, (_, _, chosen) in changed.items() for raw in chosen]
        )
        if idents != self._idents:
            self._names, self._idents = qualify_tools(idents), idents
        by_raw = self._names.by_raw
        for entry in kept.values():
            for i, spec in enumerate(entry.specs):
                name = by_raw[(spec.server or "", spec.raw_name)]
                if spec.name != name:  # a clash with a changed server renamed it: only the name changes
                    entry.specs[i] = spec.model_copy(update={"name": name})
        entries: dict[str, _Server] = {}
        built = 0
        for server in sorted(servers):
            if server in kept:
                entries[server] = kept[server]
                continue
            key, cfg, chosen = changed[server]
            entry = entries[server] = _Server(key=key, specs=[], schemas=[])
            for raw in sorted(chosen):
                built += 1
                if built % _YIELD_EVERY == 0:
                    time.sleep(0)  # hands the GIL to the event loop, which may be waiting for it
                spec, digest = self._spec(by_raw[(server, raw)], server, raw, cfg, chosen[raw], defer)
                entry.specs.append(spec)
                if digest is not None:
                    entry.schemas.append(digest)
        self._servers = entries
        self._schemas = {d: self._schemas[d] for entry in entries.values() for d in entry.schemas}
        return [spec for entry in entries.values() for spec in entry.specs], [*self._names.warnings, *refused]

    def _spec(
        self, name: str, server: str, raw: str, cfg: McpServerConfig, tool: types.Tool, defer: bool
    ) -> tuple[ToolSpec, bytes | None]:
        input_schema: dict[str, Any] = dict(tool.input_schema or {})
        schema_json = canonical_bytes(input_schema)
        digest, done = _cached(self._schemas, input_schema, schema_json, make=not defer)
        annotations = annotations_from_mcp(tool.annotations)
        description = tool.description or ""
        shown: dict[str, Any] = {"deferred": True} if done is None else {
            "parameters": done.parameters, "strict": done.strict, "warnings": list(done.warnings)
        }
        spec = ToolSpec(
            name=name,
            description=description,
            input_schema=input_schema,
            output_schema=dict(tool.output_schema) if tool.output_schema else None,
            source="mcp",
            server=server,
            raw_name=raw,
            title=tool.title,
            annotations=annotations,
            approval_mode=cfg.approval_mode_for(raw),
            trusted=cfg.trusted,
            definition_hash=definition_hash(description, input_schema, annotations, title=tool.title,
                                            schema_json=schema_json),
            **shown,
        )
        return spec, digest if done is not None else None


class Completer:
    """Completes deferred specs for a model request: each distinct schema is sanitised once, and
    a completed spec is kept while its spec object is in the catalogue (a build keeps the objects
    of a server that did not change, and makes new ones for one that did). Runs on the event loop
    (a request completes at most ``max_model_tools`` specs, most of them kept from the last one)."""

    def __init__(self) -> None:
        self._schemas: dict[bytes, _Sanitised] = {}
        self._specs: dict[int, tuple[ToolSpec, ToolSpec, bytes | None]] = {}
        """``id(deferred spec)`` -> (that spec, kept alive so the id stays its own; completed; digest)."""

    def complete(self, spec: ToolSpec) -> ToolSpec:
        """``spec`` with the schema the model sees; a spec that is not deferred as it is."""
        if not spec.deferred:
            return spec
        kept = self._specs.get(id(spec))
        if kept is None or kept[0] is not spec:
            schema = spec.input_schema or {}
            digest, shown = _cached(self._schemas, schema, canonical_bytes(schema), make=True)
            assert shown is not None
            done = spec.model_copy(
                update={"parameters": shown.parameters, "strict": shown.strict, "warnings": list(shown.warnings),
                        "deferred": False}
            )
            kept = self._specs[id(spec)] = (spec, done, digest)
        return kept[1]

    def retain(self, specs: list[ToolSpec]) -> None:
        """Forget what no spec of this catalogue uses (after each build)."""
        if not self._specs:
            return  # nothing completed yet: no pass over a catalogue of tens of thousands
        live = {id(spec) for spec in specs if spec.deferred}
        self._specs = {key: kept for key, kept in self._specs.items() if key in live}
        used = {digest for _, _, digest in self._specs.values()}
        self._schemas = {digest: done for digest, done in self._schemas.items() if digest in used}


def build_catalog(
    servers: Mapping[str, tuple[McpServerConfig, list[types.Tool]]], *, defer: bool = False
) -> tuple[list[ToolSpec], list[str]]:
    """A catalogue built from nothing (what ``CatalogBuilder`` does on its first build)."""
    return CatalogBuilder().build({name: (None, cfg, tools) for name, (cfg, tools) in servers.items()}, defer=defer)


def _cached(
    schemas: dict[bytes, _Sanitised], schema: dict[str, Any], schema_json: bytes | None, *, make: bool
) -> tuple[bytes | None, _Sanitised | None]:
    """``schema``'s digest and what the model sees of it, from ``schemas`` when exactly this
    schema was sanitised before; else sanitised now (and kept) when ``make``, or ``None``."""
    digest = hashlib.sha256(schema_json).digest() if schema_json is not None else None
    done = schemas.get(digest) if digest is not None else None
    if done is not None:
        if done.exact is None:
            done.exact = _exact(done.schema)
        if done.exact is None or _exact(schema) != done.exact:
            done = None
    if done is None and make:
        done = _sanitised(schema)
        if digest is not None:
            schemas.setdefault(digest, done)
    return digest, done


def _sanitised(schema: dict[str, Any]) -> _Sanitised:
    """What the model sees; strict only when the schema already is strict-compatible (DESIGN §4)."""
    parameters, warnings = sanitize_schema(schema)
    strict = make_strict(parameters, sanitised=True)
    return _Sanitised(schema, strict if strict is not None else parameters, tuple(warnings), strict is not None)


def _exact(schema: dict[str, Any]) -> bytes | None:
    """A digest of ``schema`` that two schemas share only when they are the same schema: the same
    key order (the sanitiser keeps properties in the order a server sent them) and the same types
    throughout, which JSON would not tell apart (a tuple from a list). ``marshal`` writes exact
    types in one C-level pass and refuses subclasses (``None``: such a schema is not shared);
    format 2 has no back-references, whose presence would hang on reference counts."""
    try:
        return hashlib.sha256(marshal.dumps(schema, 2)).digest()
    except ValueError:
        return None
