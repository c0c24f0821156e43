"""Turn the servers' raw tool lists into the model-visible catalogue (DESIGN §3, §4).

Names come from ``identity.qualify_tools`` over every ready server at once, so collisions across
servers resolve the same way regardless of start order. A ``CatalogBuilder`` keeps what it built:
a server whose tools did not change keeps its ``ToolSpec`` objects, and a schema is sanitised
once however many tools (of any server) send exactly that schema. It does no I/O and touches no
event loop, so the manager runs it in a worker thread.
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

    def build(self, servers: Mapping[str, ServerTools]) -> tuple[list[ToolSpec], list[str]]:
        """ToolSpecs for every enabled tool of the given (ready) servers, plus warnings to show."""
        with gc_paused():
            return self._build(servers)

    def _build(self, servers: Mapping[str, ServerTools]) -> tuple[list[ToolSpec], list[str]]:
        kept: dict[str, _Server] = {}
        changed: dict[str, tuple[Hashable, McpServerConfig, dict[str, types.Tool]]] = {}
        for server in sorted(servers):
            key, cfg, tools = servers[server]
            entry = self._servers.get(server)
            if entry is not None and entry.key == key:
                kept[server] = entry
            else:
                chosen: dict[str, types.Tool] = {}
                for tool in tools:
                    if cfg.tool_enabled(tool.name):
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
                spec, digest = self._spec(by_raw[(server, raw)], server, raw, cfg, chosen[raw])
                entry.specs.append(spec)
                if digest is not None:
                    entry.schemas.append(digest)
        self._servers = entries
        self._schemas = {d: self._schemas[d] for entry in entries.values() for d in entry.schemas}
        return [spec for entry in entries.values() for spec in entry.specs], list(self._names.warnings)

    def _spec(
        self, name: str, server: str, raw: str, cfg: McpServerConfig, tool: types.Tool
    ) -> tuple[ToolSpec, bytes | None]:
        input_schema: dict[str, Any] = dict(tool.input_schema or {})
        schema_json = canonical_bytes(input_schema)
        digest = hashlib.sha256(schema_json).digest() if schema_json is not None else None
        done = self._schemas.get(digest) if digest is not None else None
        if done is not None:
            if done.exact is None:
                done.exact = _exact(done.schema)
            if done.exact is None or _exact(input_schema) != done.exact:
                done = None
        if done is None:
            done = _sanitised(input_schema)
            if digest is not None:
                self._schemas.setdefault(digest, done)
        annotations = annotations_from_mcp(tool.annotations)
        description = tool.description or ""
        spec = ToolSpec(
            name=name,
            description=description,
            parameters=done.parameters,
            input_schema=input_schema,
            output_schema=dict(tool.output_schema) if tool.output_schema else None,
            source="mcp",
            server=server,
            raw_name=raw,
            title=tool.title,
            annotations=annotations,
            approval_mode=cfg.approval_mode_for(raw),
            trusted=cfg.trusted,
            definition_hash=definition_hash(description, input_schema, annotations, schema_json=schema_json),
            strict=done.strict,
            warnings=list(done.warnings),
        )
        return spec, digest


def build_catalog(
    servers: Mapping[str, tuple[McpServerConfig, list[types.Tool]]],
) -> tuple[list[ToolSpec], list[str]]:
    """A catalogue built from nothing (what ``CatalogBuilder`` does on its first build)."""
    return CatalogBuilder().build({name: (None, cfg, tools) for name, (cfg, tools) in servers.items()})


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
