"""Result wrapping: every MCP content type, structured content, truncation."""

from __future__ import annotations

import base64
import json

import mcp_types as mt
from hypothesis import given, settings
from hypothesis import strategies as st

from nbagent.core.tool_output import to_model_output, truncate_utf8
from nbagent.mcp.results import from_call_result
from nbagent.protocol.tools import ImageBlock, ResourceBlock, TextBlock, ToolResult

PNG = base64.b64encode(b"\x89PNG" + b"\0" * 96).decode()


def test_text_and_error_flag() -> None:
    r = from_call_result(mt.CallToolResult(content=[mt.TextContent(text="boom")], is_error=True))
    assert r.is_error and r.content == [TextBlock(text="boom")]
    assert to_model_output(r, 1000) == "boom"


def test_image() -> None:
    r = from_call_result(mt.CallToolResult(content=[mt.ImageContent(data=PNG, mime_type="image/png")]))
    assert r.content == [ImageBlock(data=PNG, mime_type="image/png")]
    assert to_model_output(r, 1000) == "[image: image/png, 100 bytes]"


def test_audio_becomes_placeholder_text() -> None:
    data = base64.b64encode(b"x" * 10).decode()
    r = from_call_result(mt.CallToolResult(content=[mt.AudioContent(data=data, mime_type="audio/wav")]))
    assert r.content == [TextBlock(text="[audio: audio/wav, 10 bytes, not shown]")]


def test_embedded_text_resource() -> None:
    res = mt.EmbeddedResource(
        resource=mt.TextResourceContents(uri="file:///a.txt", mime_type="text/plain", text="hello")
    )
    r = from_call_result(mt.CallToolResult(content=[res]))
    assert r.content == [ResourceBlock(uri="file:///a.txt", mime_type="text/plain", text="hello")]
    assert to_model_output(r, 1000) == "[resource: file:///a.txt]\nhello"


def test_embedded_blob_resource() -> None:
    blob = base64.b64encode(b"\0" * 7).decode()
    res = mt.EmbeddedResource(
        resource=mt.BlobResourceContents(uri="file:///b.bin", mime_type="application/octet-stream", blob=blob)
    )
    r = from_call_result(mt.CallToolResult(content=[res]))
    (block,) = r.content
    assert isinstance(block, ResourceBlock) and block.uri == "file:///b.bin" and block.text == "[binary: 7 bytes]"


def test_resource_link() -> None:
    link = mt.ResourceLink(uri="https://example.com/r", name="r", title="The R", mime_type="text/html")
    r = from_call_result(mt.CallToolResult(content=[link]))
    assert r.content == [ResourceBlock(uri="https://example.com/r", name="The R", mime_type="text/html")]
    assert to_model_output(r, 1000) == "[resource: https://example.com/r (The R)]"


def test_structured_content_keeps_text_too() -> None:
    r = from_call_result(mt.CallToolResult(content=[mt.TextContent(text="sum is 3")], structured_content={"sum": 3}))
    assert r.structured == {"sum": 3}
    assert r.content == [TextBlock(text="sum is 3")]
    assert to_model_output(r, 1000) == 'sum is 3\n{"sum":3}'


def test_structured_not_repeated_when_text_says_the_same() -> None:
    r = from_call_result(
        mt.CallToolResult(
            content=[mt.TextContent(text=json.dumps({"sum": 3}, indent=2))], structured_content={"sum": 3}
        )
    )
    assert to_model_output(r, 1000) == json.dumps({"sum": 3}, indent=2)


def test_structured_only() -> None:
    r = from_call_result(mt.CallToolResult(content=[], structured_content={"é": [1, None]}))
    assert to_model_output(r, 1000) == '{"é":[1,null]}'


def test_output_schema_valid_adds_nothing() -> None:
    schema = {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}
    r = from_call_result(mt.CallToolResult(content=[mt.TextContent(text="3")], structured_content={"sum": 3}), schema)
    assert r.content == [TextBlock(text="3")]


def test_output_schema_mismatch_warns_and_keeps_data() -> None:
    schema = {"type": "object", "properties": {"sum": {"type": "integer"}}, "required": ["sum"]}
    r = from_call_result(
        mt.CallToolResult(content=[mt.TextContent(text="x")], structured_content={"sum": "three"}), schema
    )
    assert r.structured == {"sum": "three"}
    assert r.content[0] == TextBlock(text="x")
    assert isinstance(r.content[-1], TextBlock) and "outputSchema" in r.content[-1].text and "sum" in r.content[-1].text


def test_output_schema_declared_but_missing_structured() -> None:
    r = from_call_result(mt.CallToolResult(content=[mt.TextContent(text="x")]), {"type": "object"})
    assert "no structured content" in r.content[-1].text


def test_broken_output_schema_never_raises() -> None:
    r = from_call_result(mt.CallToolResult(content=[], structured_content={"a": 1}), {"type": 12})
    assert r.structured == {"a": 1}
    assert "outputSchema" in r.content[-1].text


def test_mixed_order_preserved() -> None:
    blocks = [mt.TextContent(text="a"), mt.ImageContent(data=PNG, mime_type="image/jpeg"), mt.TextContent(text="b")]
    out = to_model_output(from_call_result(mt.CallToolResult(content=blocks)), 1000)
    assert out == "a\n[image: image/jpeg, 100 bytes]\nb"


def test_truncation_marker_says_how_much_was_cut() -> None:
    text = "H" * 5000 + "T" * 5000
    out = to_model_output(ToolResult.text(text), 1000)
    assert len(out.encode()) <= 1000
    assert out.startswith("HHH") and out.endswith("TTT")
    head, _, tail = out.partition("\n[... ")
    cut = int(tail.split(" bytes cut")[0])
    kept = len(head.encode()) + len(tail.split("...]\n", 1)[1].encode())
    assert cut + kept == 10000


def test_no_truncation_when_it_fits() -> None:
    assert to_model_output(ToolResult.text("short"), 5) == "short"


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400), st.integers(min_value=0, max_value=500))
def test_truncation_is_utf8_safe_and_bounded(text: str, cap: int) -> None:
    out = truncate_utf8(text, cap)
    assert len(out.encode("utf-8")) <= cap
    if len(text.encode()) <= cap:
        assert out == text


def test_a_structured_wrapper_of_the_text_is_not_repeated_to_the_model() -> None:
    from nbagent.core.tool_output import render_for_model
    from nbagent.protocol import TextBlock, ToolResult

    wrapped = ToolResult(content=[TextBlock(text="wrote hello.md")], structured={"result": "wrote hello.md"})
    assert render_for_model(wrapped) == "wrote hello.md"
    other = ToolResult(content=[TextBlock(text="wrote hello.md")], structured={"result": "something else"})
    assert render_for_model(other) == 'wrote hello.md\n{"result":"something else"}'


def test_output_schema_patterns_cannot_hang_the_loop() -> None:
    """A hostile outputSchema ``pattern`` (catastrophic backtracking) must not freeze the event
    loop every server shares; checked in a child process so a regression fails, not hangs."""
    import subprocess
    import sys

    code = (
        "import mcp_types as mt\n"
        "from nbagent.mcp.results import from_call_result\n"
        "schema = {'type': 'object', 'properties': {'a': {'type': 'string', 'pattern': '^(a+)+$'}},\n"
        "          'patternProperties': {'^(b+)+$': {'type': 'string'}}, 'additionalProperties': False}\n"
        "r = mt.CallToolResult(content=[], structured_content={'a': 'a' * 64 + '!', 'b' * 64 + '!': 'x'})\n"
        "print(len(from_call_result(r, schema).content))\n"
        "named = {'type': 'object', 'properties': {'pattern': {'type': 'integer'}}, 'required': ['pattern']}\n"
        "bad = from_call_result(mt.CallToolResult(content=[], structured_content={'pattern': 'x'}), named)\n"
        "assert any('outputSchema' in b.text for b in bad.content), bad\n"
    )
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=15)
    except subprocess.TimeoutExpired:
        raise AssertionError("validating structured content against the outputSchema hung") from None
    assert done.returncode == 0, done.stderr
