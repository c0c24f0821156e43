"""``.mcp.json`` as Claude Code reads it: ``{"mcpServers": {NAME: {...}}}`` with ``type``
(``stdio`` | ``http`` | ``sse``), ``headers``, ``disabled``, and ``${VAR}`` / ``${VAR:-default}``
expanded in ``command``, ``args``, ``env``, ``url`` and ``headers``.

The result is nbagent's own ``mcp_servers`` shape, so the model validates it like any other file,
and, per server, each value an expansion made -> the text as written, so that nbagent shows a
server as written (``${TOKEN}``), never what a variable held.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nbagent.config.errors import ConfigError
from nbagent.config.files import read_json

MCP_JSON = ".mcp.json"
MCP_JSON_TYPES = ("stdio", "http", "sse")
"""``.mcp.json`` ``type`` values; each is the ``transport`` of the same name."""
RENAMED = {"type": "transport", "headers": "http_headers"}
"""Claude Code's key -> nbagent's, so an error can name the key as the file spells it."""
_SPELLED = {ours: claude for claude, ours in RENAMED.items()}
EXPANDED = ("command", "args", "env", "url", "headers")
_VARIABLE = re.compile(r"\$\{([^}]*)\}")
IGNORED = {
    "headersHelper": "nbagent runs no command to make headers; set headers",
    "oauth.authServerMetadataUrl": "the authorization server is found from the server's own metadata",
}


def expand(text: str, environ: Mapping[str, str], where: str, written: dict[str, str] | None = None) -> str:
    """``${VAR}`` -> its value, ``${VAR:-default}`` -> its value or ``default`` when unset.
    ``$VAR`` without braces stays as written, as in Claude Code. ``written`` gets each value a
    variable gave and the whole text expanded -> as written."""

    def one(match: re.Match[str]) -> str:
        name, has_default, default = match.group(1).partition(":-")
        if name in environ:
            value = environ[name]
        elif has_default:
            value = default
        else:
            raise ConfigError(
                f"{where}: environment variable {name} is not set (write ${{{name}:-default}} to give a default)"
            )
        if written is not None and value:
            written.setdefault(value, match.group(0))
        return value

    expanded = _VARIABLE.sub(one, text)
    if written is not None and expanded and expanded != text:
        written[expanded] = text
    return expanded


def _expand_value(value: Any, environ: Mapping[str, str], where: str, written: dict[str, str]) -> Any:
    """Strings, and the strings in a list or an object's values; other types stay for the
    model to refuse (an ``args`` that is not a list is an error, not a string to split)."""
    if isinstance(value, str):
        return expand(value, environ, where, written)
    if isinstance(value, list):
        return [_expand_value(item, environ, f"{where}[{i}]", written) for i, item in enumerate(value)]
    if isinstance(value, dict):
        return {k: expand(v, environ, f"{where}.{k}", written) if isinstance(v, str) else v for k, v in value.items()}
    return value


def _oauth(entry: dict[str, Any], where: str, notes: list[str]) -> None:
    """Claude Code's ``oauth`` table, in Codex's words where there are some."""
    raw = entry.pop("oauth")
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}.oauth': must be an object")
    table = dict(raw)
    if "scopes" in table:
        scopes = table.pop("scopes")
        if not isinstance(scopes, str):
            raise ConfigError(f"{where}.oauth.scopes': must be a string of space-separated scopes, got {scopes!r}")
        entry["scopes"] = scopes.split()
    oauth = {
        codex: table.pop(claude)
        for claude, codex in (("clientId", "client_id"), ("callbackPort", "callback_port"))
        if claude in table
    }
    for key in list(table):
        reason = IGNORED.get(f"oauth.{key}")
        if reason is None:
            raise ConfigError(f"{where}.oauth.{key}': unknown key")
        del table[key]
        notes.append(f"{where}.oauth.{key}' is ignored: {reason}")
    if oauth:
        entry["oauth"] = oauth


def _server(
    name: str, raw: Any, path: Path, environ: Mapping[str, str], notes: list[str], written: dict[str, str]
) -> dict[str, Any]:
    where = f"{path}: key 'mcpServers.{name}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}': must be an object")
    entry = {
        key: _expand_value(value, environ, f"{where}.{key}'", written) if key in EXPANDED else value
        for key, value in raw.items()
    }
    if "type" in entry:
        kind = entry["type"]
        if kind not in MCP_JSON_TYPES:
            raise ConfigError(f"{where}.type': must be one of {', '.join(MCP_JSON_TYPES)}, got {kind!r}")
    for claude, ours in RENAMED.items():
        if claude in entry:
            entry[ours] = entry.pop(claude)
    if "disabled" in entry:
        disabled = entry.pop("disabled")
        if not isinstance(disabled, bool):
            raise ConfigError(f"{where}.disabled': must be true or false, got {disabled!r}")
        if disabled:
            entry["enabled"] = False
    if "headersHelper" in entry:
        del entry["headersHelper"]
        notes.append(f"{where}.headersHelper' is ignored: {IGNORED['headersHelper']}")
    if "oauth" in entry:
        _oauth(entry, where, notes)
    return entry


def read_mcp_json(
    path: Path, environ: Mapping[str, str]
) -> tuple[dict[str, Any], list[str], dict[str, dict[str, str]]]:
    """``({"mcp_servers": ...}, warnings, written)`` from one ``.mcp.json``; ``written``: for
    each server, each value an expansion made -> as written."""
    data = read_json(path)
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(f"{path}: key 'mcpServers' must be an object of servers")
    notes: list[str] = []
    written: dict[str, dict[str, str]] = {name: {} for name in servers}
    out = {name: _server(name, raw, path, environ, notes, written[name]) for name, raw in servers.items()}
    return {"mcp_servers": out}, notes, {name: seen for name, seen in written.items() if seen}


def file_key(loc: str) -> str:
    """``mcp_servers.x.http_headers`` -> ``mcpServers.x.headers``: a key as ``.mcp.json`` spells it."""
    parts = loc.split(".")
    if parts[0] == "mcp_servers":
        parts[0] = "mcpServers"
        if len(parts) > 2:
            parts[2] = _SPELLED.get(parts[2], parts[2])
    return ".".join(parts)
