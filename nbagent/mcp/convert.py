"""MCP types <-> nbagent types, both directions, in one place (DESIGN §3, §7).

The client side (``mcp/``) reads servers' tools and results into nbagent types; the server
side (``server/``, nbagent as an MCP server) writes nbagent's tools and results as MCP types.
Kept together so a field added on one side is seen missing on the other. Pure mapping: no
policy, no sanitising, no I/O (``catalog.py`` and ``results.py`` add those on the client side).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import mcp_types as types

from nbagent.protocol import (
    ContentBlock,
    FunctionCallOutput,
    ImageBlock,
    ResourceBlock,
    TextBlock,
    ToolAnnotations,
    ToolCallEnd,
    ToolResult,
    ToolSpec,
)


def b64_size(data: str) -> int:
    """Decoded size of base64 ``data`` without decoding it."""
    n = len(data) - data.count("\n") - data.count("\r") - data.count(" ")
    return max(0, n * 3 // 4 - (2 if data.endswith("==") else 1 if data.endswith("=") else 0))


# ---------------------------------------------------------------------------------------------
# MCP -> nbagent (the client side)


def annotations_from_mcp(a: types.ToolAnnotations | None) -> ToolAnnotations | None:
    if a is None:
        return None
    return ToolAnnotations(
        title=a.title,
        read_only_hint=a.read_only_hint,
        destructive_hint=a.destructive_hint,
        idempotent_hint=a.idempotent_hint,
        open_world_hint=a.open_world_hint,
    )


def block_from_mcp(block: Any) -> ContentBlock:
    """One content block of a server's result; audio and binary blobs become a short note."""
    if isinstance(block, types.TextContent):
        return TextBlock(text=block.text)
    if isinstance(block, types.ImageContent):
        return ImageBlock(data=block.data, mime_type=block.mime_type or "image/png")
    if isinstance(block, types.AudioContent):
        return TextBlock(text=f"[audio: {block.mime_type}, {b64_size(block.data)} bytes, not shown]")
    if isinstance(block, types.EmbeddedResource):
        res = block.resource
        if isinstance(res, types.TextResourceContents):
            return ResourceBlock(uri=res.uri, mime_type=res.mime_type, text=res.text)
        size = b64_size(getattr(res, "blob", "") or "")
        return ResourceBlock(uri=res.uri, mime_type=res.mime_type, text=f"[binary: {size} bytes]")
    if isinstance(block, types.ResourceLink):
        return ResourceBlock(uri=block.uri, mime_type=block.mime_type, name=block.title or block.name)
    kind = getattr(block, "type", type(block).__name__)
    return TextBlock(text=f"[unsupported content: {kind}]")


def result_from_mcp(result: types.CallToolResult) -> ToolResult:
    """A server's result as it came: every block, structured content, the error flag, ``_meta``."""
    meta = result.meta if isinstance(result.meta, dict) and result.meta else None
    return ToolResult(
        content=[block_from_mcp(b) for b in result.content or []],
        structured=result.structured_content,
        is_error=bool(result.is_error),
        meta=meta,
    )


# ---------------------------------------------------------------------------------------------
# nbagent -> MCP (the server side)


def annotations_to_mcp(a: ToolAnnotations | None) -> types.ToolAnnotations | None:
    if a is None:
        return None
    return types.ToolAnnotations(
        title=a.title,
        read_only_hint=a.read_only_hint,
        destructive_hint=a.destructive_hint,
        idempotent_hint=a.idempotent_hint,
        open_world_hint=a.open_world_hint,
    )


def tool_to_mcp(spec: ToolSpec) -> types.Tool:
    """A catalogue entry under its model-visible name, with the server's own schema when it has one."""
    schema = spec.input_schema or spec.parameters or {"type": "object", "properties": {}}
    if schema.get("type") != "object":
        schema = spec.parameters
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=schema,
        annotations=annotations_to_mcp(spec.annotations),
    )


def blocks_to_mcp(blocks: Iterable[ContentBlock], fallback: str) -> list[types.ContentBlock]:
    """The display blocks of a call; the model's text view (``fallback``) when there are none."""
    out: list[types.ContentBlock] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            out.append(types.TextContent(type="text", text=block.text))
        elif isinstance(block, ImageBlock):
            out.append(types.ImageContent(type="image", data=block.data, mime_type=block.mime_type))
        elif isinstance(block, ResourceBlock):
            if block.text is not None:
                resource = types.TextResourceContents(uri=block.uri, mime_type=block.mime_type, text=block.text)
                out.append(types.EmbeddedResource(type="resource", resource=resource))
            else:
                out.append(types.ResourceLink(type="resource_link", uri=block.uri, name=block.name or block.uri,
                                              mime_type=block.mime_type))
    return out or [types.TextContent(type="text", text=fallback)]


def output_to_mcp(output: FunctionCallOutput | ToolCallEnd) -> types.CallToolResult:
    """A finished call (its output item, or the ``tool_call_end`` a ``CallTool`` op ends with) as
    an MCP result; structured content only when it is an object, as MCP wants."""
    structured = output.structured if isinstance(output.structured, dict) else None
    return types.CallToolResult(content=blocks_to_mcp(output.content, output.output),
                                structured_content=structured, is_error=output.is_error)
