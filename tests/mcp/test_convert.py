"""MCP <-> nbagent conversions: what the server side writes, the client side reads back unchanged."""

from __future__ import annotations

import mcp_types as mt

from nbagent.mcp.convert import (
    annotations_from_mcp,
    block_from_mcp,
    blocks_to_mcp,
    output_to_mcp,
    result_from_mcp,
    tool_to_mcp,
)
from nbagent.protocol import FunctionCallOutput, ImageBlock, ResourceBlock, TextBlock, ToolAnnotations, ToolSpec


def test_a_served_tool_reads_back_with_its_name_schema_and_annotations() -> None:
    annotations = ToolAnnotations(title="Wipe", read_only_hint=False, destructive_hint=True, open_world_hint=False)
    schema = {"type": "object", "properties": {"cell": {"type": "integer"}}, "required": ["cell"]}
    spec = ToolSpec(name="wipe", title="Wipe a cell", description="Clears one cell.", input_schema=schema,
                    annotations=annotations)
    tool = tool_to_mcp(spec)
    assert (tool.name, tool.title, tool.description, tool.input_schema) == ("wipe", "Wipe a cell", "Clears one cell.",
                                                                            schema)
    assert annotations_from_mcp(tool.annotations) == annotations
    assert tool_to_mcp(ToolSpec(name="bare")).annotations is None


def test_display_blocks_survive_a_trip_through_mcp() -> None:
    blocks = [
        TextBlock(text="hello"),
        ImageBlock(data="iVBORw0KGgo=", mime_type="image/png"),
        ResourceBlock(uri="note://a", mime_type="text/plain", text="body"),
        ResourceBlock(uri="file:///x.csv", mime_type="text/csv", name="x.csv"),
    ]
    assert [block_from_mcp(b) for b in blocks_to_mcp(blocks, "unused")] == blocks
    assert blocks_to_mcp([], "the model's text") == [mt.TextContent(type="text", text="the model's text")]


def test_a_finished_call_reads_back_as_the_same_result() -> None:
    output = FunctionCallOutput(turn_id="t", call_id="c", output="2 + 2 = 4", is_error=True,
                                content=[TextBlock(text="4")], structured={"sum": 4})
    back = result_from_mcp(output_to_mcp(output))
    assert (back.content, back.structured, back.is_error) == ([TextBlock(text="4")], {"sum": 4}, True)
    listed = output_to_mcp(output.model_copy(update={"structured": [1, 2]}))
    assert listed.structured_content is None  # MCP structured content is an object
