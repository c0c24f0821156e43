"""A server's ``CallToolResult`` -> nbagent ``ToolResult`` (DESIGN §7, §13).

Tool output is untrusted data: it is converted, never interpreted. Structured content is kept
next to the text (never instead of it) and an ``outputSchema`` mismatch is reported to the model
rather than hidden. What the model then reads of it is ``core/tool_output.py``.
"""

from __future__ import annotations

import re
from typing import Any

import mcp_types

from nbagent.mcp.convert import result_from_mcp
from nbagent.mcp.validation import compiled, first_problem
from nbagent.protocol.tools import TextBlock, ToolResult
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
