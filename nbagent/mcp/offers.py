"""``%agent resources`` and ``%agent prompts``: what MCP servers offer besides tools, for the user.

Resources and prompts are for people to read and pick, not for the model to call, so they are
listed and read here on request. Every word comes from an untrusted server: the text is shown
with its controls and invisible characters made visible (DESIGN §13), and each request is bounded
by the server's ``tool_timeout_sec`` so a hung server cannot keep the command waiting.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from nbagent.mcp.errors import describe_error
from nbagent.mcp.manager import McpConnectionManager
from nbagent.textsafe import describe_for_display

T = TypeVar("T")

RESOURCES_USAGE = "resources [SERVER [URI]]"
PROMPTS_USAGE = "prompts [SERVER [NAME [KEY=VALUE]...]]"
MAX_SHOWN = 20_000
"""Characters of server text one command prints; a huge resource is cut, not flooded into the cell."""


async def resources(mcp: McpConnectionManager, args: list[str]) -> str:
    """Every ready server's resources (or one server's), or the contents of ``SERVER URI``."""
    if len(args) == 2:
        server, uri = args
        contents = await _bounded(mcp, server, lambda: mcp.read_resource(server, uri))
        return _visible("\n".join(_resource_text(c) for c in contents) or f"{uri}: (empty)")
    lines: list[str] = []
    for server in args or _ready(mcp):
        try:
            found = await _bounded(mcp, server, functools.partial(mcp.list_resources, server))
        except Exception as exc:  # noqa: BLE001 - one server's failure is its line, not the command's
            lines.append(f"{server}: resources not listed: {exc}")
            continue
        lines.append(f"{server}: {len(found)} resource(s)")
        lines.extend(f"  {r.get('uri', '?')}  {r.get('name', '')}{_about(r)}" for r in found)
    return _visible("\n".join(lines) or "no MCP server is ready")


async def prompts(mcp: McpConnectionManager, args: list[str]) -> str:
    """Every ready server's prompts with their arguments, or ``SERVER NAME`` filled in with ``KEY=VALUE``."""
    if len(args) >= 2:
        server, name, values = args[0], args[1], prompt_arguments(args[2:])
        result = await _bounded(mcp, server, lambda: mcp.get_prompt(server, name, values or None))
        lines = [f"{m.get('role', '?')}: {_content_text(m.get('content'))}" for m in result.get("messages", [])]
        return _visible("\n".join(lines) or f"{name}: (no messages)")
    lines = []
    for server in args or _ready(mcp):
        try:
            found = await _bounded(mcp, server, functools.partial(mcp.list_prompts, server))
        except Exception as exc:  # noqa: BLE001
            lines.append(f"{server}: prompts not listed: {exc}")
            continue
        lines.append(f"{server}: {len(found)} prompt(s)")
        for p in found:
            params = " ".join(
                f"{a.get('name', '?')}=…" if a.get("required") else f"[{a.get('name', '?')}=…]"
                for a in p.get("arguments") or []
            )
            lines.append(f"  {p.get('name', '?')}{' ' + params if params else ''}{_about(p)}")
    return _visible("\n".join(lines) or "no MCP server is ready")


def prompt_arguments(words: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` words as a prompt's arguments; anything else is a usage error."""
    values: dict[str, str] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise ValueError(f"prompt arguments are KEY=VALUE, not {word!r}; {PROMPTS_USAGE}")
        values[key] = value
    return values


def _ready(mcp: McpConnectionManager) -> list[str]:
    return [name for name, st in mcp.status().items() if st.state == "ready"]


async def _bounded(mcp: McpConnectionManager, server: str, request: Callable[[], Awaitable[T]]) -> T:
    cfg = mcp.servers.get(server)
    if cfg is None:
        raise ValueError(f"no MCP server named {server!r} (configured: {', '.join(mcp.servers) or 'none'})")
    try:
        return await asyncio.wait_for(request(), cfg.tool_timeout_sec)
    except TimeoutError:
        raise TimeoutError(f"MCP server {server!r} did not answer in {cfg.tool_timeout_sec:g} s") from None
    except Exception as exc:  # the server's refusal, in its words made visible, naming it
        raise RuntimeError(_visible(f"MCP server {server!r}: {describe_error(exc)}")) from None


def _about(entry: dict[str, Any]) -> str:
    description = entry.get("description") or entry.get("title")
    return f" — {description}" if description else ""


def _resource_text(content: dict[str, Any]) -> str:
    """A resource's text as it is; a binary one by its type and size."""
    if isinstance(content.get("text"), str):
        return content["text"]
    mime = content.get("mime_type") or "binary"
    return f"[{mime} data, {len(content.get('blob') or '')} base64 characters, at {content.get('uri', '?')}]"


def _content_text(content: Any) -> str:
    """One prompt message's content: text as it is, anything else by its kind."""
    if not isinstance(content, dict):
        return str(content)
    kind = content.get("type")
    if kind == "text":
        return str(content.get("text", ""))
    if kind == "resource" and isinstance(content.get("resource"), dict):
        return _resource_text(content["resource"])
    where = content.get("uri") or content.get("mime_type") or ""
    return f"[{kind}{' ' + where if where else ''}]"


def _visible(text: str) -> str:
    """Controls and invisible characters shown, and no more than ``MAX_SHOWN`` characters."""
    cut = f"\n[... {len(text) - MAX_SHOWN} more characters not shown]" if len(text) > MAX_SHOWN else ""
    return describe_for_display(text[:MAX_SHOWN]) + cut
