"""A server's ``CallToolResult`` -> nbagent ``ToolResult`` -> what the model reads (DESIGN §7, §13).

Tool output is untrusted data: it is converted, never interpreted. Structured content is kept
next to the text (never instead of it), an ``outputSchema`` mismatch is reported to the model
rather than hidden, and the model's view is capped in bytes with a marker saying what was cut.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import mcp_types

from nbagent.mcp.convert import b64_size, result_from_mcp
from nbagent.mcp.validation import compiled, first_problem
from nbagent.protocol.tools import ImageBlock, ResourceBlock, TextBlock, ToolResult
from nbagent.schema import without_regexes


def _structured_problem(structured: Any, output_schema: dict[str, Any]) -> str | None:
    """Why ``structured`` does not match ``output_schema``, or ``None``. Never raises."""
    try:
        # A server's regular expressions are never run: one that backtracks catastrophically would
        # freeze the event loop every server and the kernel share. Patterns are not checked.
        return first_problem(compiled(without_regexes(output_schema)), structured)
    except Exception as e:  # noqa: BLE001 - a broken schema from the server is its problem, not the turn's
        return f"the tool's outputSchema could not be used ({type(e).__name__}: {e})"


_SDK_ERROR = re.compile(r"Error executing tool ([^\s:]+)(?::\s*(.*))?", re.DOTALL)
_UNRESOLVED = re.compile(r"Resolver for parameter '([^']*)' could not resolve: elicitation was (decline|cancel)\w*")
_ASK_OUTCOME = {"decline": "declined", "cancel": "cancelled"}


def explain_error(text: str) -> str:
    """An SDK server's error text, said so a person (and the model) can act on it.

    MCP SDK servers answer a crash inside a tool with only ``Error executing tool NAME`` (the
    reason stays in the server's log), and a question the user declined with a resolver
    message. The server's words are kept, after what they mean.
    """
    m = _SDK_ERROR.fullmatch(text.strip())
    if m is None:
        return text
    tool, reason = m.group(1), (m.group(2) or "").strip()
    if not reason:
        return (f"{tool} failed and the server gave no reason (an SDK server says only \"{text.strip()}\" "
                "when a tool fails unexpectedly; the server's log has the details).")
    if asked := _UNRESOLVED.search(reason):
        return (f"The user {_ASK_OUTCOME[asked.group(2)]} the server's question, so {tool} did not run. "
                f"(server: {reason})")
    return text


def from_call_result(result: mcp_types.CallToolResult, output_schema: dict[str, Any] | None = None) -> ToolResult:
    """Wrap a server's result; text, images, resources and structured content all survive."""
    converted = result_from_mcp(result)
    content = converted.content
    if converted.is_error:
        content = [TextBlock(text=explain_error(b.text)) if isinstance(b, TextBlock) else b for b in content]
    structured = converted.structured
    if output_schema is not None and isinstance(output_schema, dict):
        if structured is None:
            if not converted.is_error:
                content = [
                    *content, TextBlock(text="[warning: the tool declares an outputSchema but returned no structured content]")
                ]
        else:
            problem = _structured_problem(structured, output_schema)
            if problem:
                content = [
                    *content, TextBlock(text=f"[warning: structured content does not match the tool's outputSchema {problem}]")
                ]
    # A copy only when a block changed or was added: most results pass through as converted.
    return converted if content is converted.content else converted.model_copy(update={"content": content})


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
    content = result.content
    if len(content) == 1 and result.structured is None and type(block := content[0]) is TextBlock:
        text = block.text  # most results: one text block, rendered as itself
        return text if len(text) * 4 <= max_bytes else truncate_utf8(text, max_bytes)
    return truncate_utf8(render_for_model(result), max_bytes)
