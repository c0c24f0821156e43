"""A ``ToolResult`` -> what the model reads, capped in bytes with a marker saying what was cut
(DESIGN §7, §13). The same for every tool source: an MCP server's result or a notebook
function's."""

from __future__ import annotations

import json
import math
from typing import Any

from nbagent.mcp.convert import b64_size
from nbagent.protocol.tools import ImageBlock, ResourceBlock, TextBlock, ToolResult


def _compact_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    except (ValueError, TypeError):
        return json.dumps(_jsonable(value), ensure_ascii=False, separators=(",", ":"), default=str)


def _jsonable(value: Any, depth: int = 0) -> Any:
    """A JSON-safe copy: NaN/inf become strings, cycles and deep nesting are cut."""
    if depth > 100:
        return "..."
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in value]
    return value


def _already_in_text(structured: Any, texts: list[str]) -> bool:
    """Whether some text block already says the same JSON (servers often send both), or the
    structured value only wraps the text (``{"result": "<the text>"}``, as SDK servers do for
    plain return values)."""
    if isinstance(structured, dict) and len(structured) == 1:
        (only,) = structured.values()
        if isinstance(only, str) and "\n".join(texts) == only:
            return True
    for t in texts:
        s = t.strip()
        if s[:1] in ("{", "[", '"') or s in ("null", "true", "false") or s[:1].isdigit() or s[:1] == "-":
            try:
                if json.loads(s) == structured:
                    return True
            except ValueError:
                continue
    return False


def render_for_model(result: ToolResult) -> str:
    """The whole model view of ``result``, before any byte cap."""
    parts: list[str] = []
    texts: list[str] = []
    for block in result.content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
            texts.append(block.text)
        elif isinstance(block, ImageBlock):
            parts.append(f"[image: {block.mime_type}, {b64_size(block.data)} bytes]")
        elif isinstance(block, ResourceBlock):
            head = f"[resource: {block.uri}]"
            if block.name:
                head = f"[resource: {block.uri} ({block.name})]"
            parts.append(head + ("\n" + block.text if block.text else ""))
    if result.structured is not None and not _already_in_text(result.structured, texts):
        parts.append(_compact_json(result.structured))
    return "\n".join(parts)


def truncate_utf8(text: str, max_bytes: int, tail_fraction: float = 0.2) -> str:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes, keeping head and tail around a marker."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    if max_bytes <= 0:
        return ""
    total = len(data)
    marker_max = len(f"\n[... {total} bytes cut ...]\n".encode())
    budget = max_bytes - marker_max
    if budget <= 0:  # no room for a marker: a clean prefix is the best we can do
        return data[:max_bytes].decode("utf-8", errors="ignore")
    tail_n = int(budget * tail_fraction)
    head = data[: budget - tail_n].decode("utf-8", errors="ignore")
    tail = data[total - tail_n :].decode("utf-8", errors="ignore") if tail_n else ""
    cut = total - len(head.encode("utf-8")) - len(tail.encode("utf-8"))
    return f"{head}\n[... {cut} bytes cut ...]\n{tail}"


def to_model_output(result: ToolResult, max_bytes: int) -> str:
    """What the model reads for ``result``, at most ``max_bytes`` UTF-8 bytes."""
    content, structured = result.content, result.structured
    if len(content) == 1 and type(block := content[0]) is TextBlock and (
        structured is None or (type(structured) is dict and len(structured) == 1 and block.text in structured.values())
    ):  # most results: one text block, alone or with a value that only wraps it, rendered as itself
        text = block.text
        return text if len(text) * 4 <= max_bytes else truncate_utf8(text, max_bytes)
    return truncate_utf8(render_for_model(result), max_bytes)
