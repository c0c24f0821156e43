"""Turn the servers' raw tool lists into the model-visible catalogue (DESIGN §3, §4).

Pure: the manager calls it whenever a server's tools or state change. Names come from
``identity.qualify_tools`` over every ready server at once, so collisions across servers
resolve the same way regardless of start order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types

from nbagent.config import McpServerConfig
from nbagent.mcp.convert import annotations_from_mcp
from nbagent.mcp.identity import qualify_tools
from nbagent.protocol import ToolSpec
from nbagent.schema import definition_hash, make_strict, sanitize_schema


def build_catalog(
    servers: Mapping[str, tuple[McpServerConfig, list[types.Tool]]],
) -> tuple[list[ToolSpec], list[str]]:
    """ToolSpecs for every enabled tool of the given (ready) servers, plus warnings to show."""
    chosen: dict[tuple[str, str], tuple[McpServerConfig, types.Tool]] = {}
    for server, (cfg, tools) in servers.items():
        for tool in tools:
            if cfg.tool_enabled(tool.name):
                chosen.setdefault((server, tool.name), (cfg, tool))
    qualified = qualify_tools(list(chosen))
    warnings = list(qualified.warnings)
    specs: list[ToolSpec] = []
    for (server, raw), (cfg, tool) in sorted(chosen.items()):
        input_schema: dict[str, Any] = dict(tool.input_schema or {})
        parameters, schema_warnings, strict = _sanitized(input_schema)
        annotations = annotations_from_mcp(tool.annotations)
        description = tool.description or ""
        specs.append(
            ToolSpec(
                name=qualified.by_raw[(server, raw)],
                description=description,
                parameters=parameters,
                input_schema=input_schema,
                output_schema=dict(tool.output_schema) if tool.output_schema else None,
                source="mcp",
                server=server,
                raw_name=raw,
                title=tool.title,
                annotations=annotations,
                approval_mode=cfg.approval_mode_for(raw),
                trusted=cfg.trusted,
                definition_hash=definition_hash(description, input_schema, annotations),
                strict=strict,
                warnings=schema_warnings,
            )
        )
    return specs, warnings


def _sanitized(schema: dict[str, Any]) -> tuple[dict[str, Any], list[str], bool]:
    """What the model sees; strict only when the schema already is strict-compatible (DESIGN §4)."""
    parameters, warnings = sanitize_schema(schema)
    strict = make_strict(parameters)
    return (strict, warnings, True) if strict is not None else (parameters, warnings, False)

