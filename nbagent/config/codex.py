"""Codex's ``[mcp_servers.NAME]`` keys that nbagent reads differently or cannot honour.

A Codex ``config.toml`` must load unchanged: a key nbagent has no use for is dropped with a
warning naming it and saying what is ignored, never refused. Keys nbagent honours under the
same name and meaning are plain fields of ``McpServerConfig`` and never reach this module.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import InitErrorDetails

IGNORED = {
    "http_headers_helper": "nbagent runs no command to make headers; set http_headers or env_http_headers",
    "omit_tools_from": "every enabled tool is offered to the model; use disabled_tools to hide one",
    "supports_parallel_tool_calls": (
        "a server's calls run together only when they are known to be read-only (top-level parallel_tool_calls)"
    ),
}
"""Codex key -> what nbagent does instead, for keys dropped whenever they are set to anything
but Codex's default."""
DEFAULTS: dict[str, Any] = {"supports_parallel_tool_calls": False, "omit_tools_from": [], "environment_id": "local"}
"""Values that mean what nbagent does anyway: dropped without a word."""
SILENT = ("name",)
"""Keys Codex itself accepts and ignores (a legacy display name)."""
OAUTH_KEYS = {
    "callback_url": "the login callback is always on 127.0.0.1, at the port nbagent listens on",
    "callback_port": "the login callback's port is the top-level mcp_oauth_callback_port",
}
"""Codex's ``[mcp_servers.NAME.oauth]`` keys nbagent's own table (``OAuthSettings``) lacks ->
what nbagent does instead."""
STDIO_ONLY = ("args", "env", "env_vars", "cwd")
HTTP_ONLY = ("http_headers", "env_http_headers", "bearer_token_env_var", "scopes", "oauth_resource", "oauth")
M = TypeVar("M", bound=BaseModel)


class _Ignored(BaseModel):
    """The types Codex gives the keys nbagent ignores: a wrong one is still an error."""

    model_config = ConfigDict(extra="ignore", strict=True)
    http_headers_helper: str | None = None
    omit_tools_from: list[str] | None = None
    supports_parallel_tool_calls: bool | None = None
    environment_id: str | None = None
    auth: Literal["oauth", "chatgpt"] | None = None


class _IgnoredTool(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    output_token_limit: int | None = Field(default=None, gt=0)


class _IgnoredOAuth(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    callback_url: str | None = None
    callback_port: int | None = Field(default=None, ge=1, le=65535)


def _check(model: type[M], data: Any, *at: str | int) -> M:
    """``data`` as ``model``; a problem is raised at its key in the server's table (``at``: where
    ``data`` sits in it), so the loader words it as every config problem is
    (:func:`nbagent.config.errors.problems`), the server's own key path in front."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        moved: list[InitErrorDetails] = []
        for e in exc.errors():
            detail = InitErrorDetails(type=e["type"], loc=(*at, *e["loc"]), input=e["input"])
            if "ctx" in e:
                detail["ctx"] = e["ctx"]
            moved.append(detail)
        raise ValidationError.from_exception_data(exc.title, moved) from None


class _EnvVar(BaseModel):
    """Codex's ``env_vars = [{ name = "X", source = "local" }]`` form of one name."""

    model_config = ConfigDict(extra="forbid", strict=True)
    name: str
    source: Literal["local", "remote"] | None = None


def translate(data: dict[str, Any], oauth_keys: frozenset[str]) -> tuple[dict[str, Any], list[str]]:
    """``(data nbagent's model reads, warnings)`` for one server table.

    ``oauth_keys``: the keys nbagent's own ``oauth`` table has.
    Raises ``ValueError`` for what Codex refuses too (``bearer_token``), and ``ValidationError``
    at the key for a value of the wrong type.
    """
    data, notes = dict(data), []
    if "bearer_token" in data:
        raise ValueError(
            "'bearer_token' is not supported (a secret in a config file): put the token in an "
            "environment variable and name it in bearer_token_env_var"
        )
    _check(_Ignored, data)
    for key in SILENT:
        data.pop(key, None)
    for key, default in DEFAULTS.items():
        if key in data and data[key] == default:
            del data[key]
    if "environment_id" in data:
        value = data.pop("environment_id")
        notes.append(f"key 'environment_id' ({value!r}) is ignored: nbagent starts every server on this machine")
    if data.pop("auth", None) == "chatgpt":  # "oauth" is what nbagent does
        notes.append("key 'auth' ('chatgpt') is ignored: nbagent has no ChatGPT session; OAuth is used")
    for key, instead in IGNORED.items():
        if key in data:
            del data[key]
            notes.append(f"key '{key}' is ignored: {instead}")
    if isinstance(data.get("env_vars"), list):
        data["env_vars"] = [_env_var(entry, index, notes) for index, entry in enumerate(data["env_vars"])]
    if isinstance(data.get("tools"), dict):
        data["tools"] = {name: _tool(name, table, notes) for name, table in data["tools"].items()}
    if isinstance(data.get("oauth"), dict):
        data["oauth"] = _oauth(data["oauth"], oauth_keys, notes)
    return data, notes


def _env_var(entry: Any, index: int, notes: list[str]) -> Any:
    if not isinstance(entry, dict):
        return entry  # a name, or a wrong type the model reports
    parsed = _check(_EnvVar, entry, "env_vars", index)
    if parsed.source == "remote":
        notes.append(
            f"key 'env_vars' ({parsed.name!r} from source 'remote'): the source is ignored, "
            "the variable is read from this machine's environment"
        )
    return parsed.name


def _tool(name: str, table: Any, notes: list[str]) -> Any:
    if isinstance(table, dict) and "output_token_limit" in table:
        _check(_IgnoredTool, table, "tools", name)
        table = {k: v for k, v in table.items() if k != "output_token_limit"}
        notes.append(
            f"key 'tools.{name}.output_token_limit' is ignored: tool_output_max_bytes caps what the model sees of every result"
        )
    return table


def _oauth(table: dict[str, Any], keys: frozenset[str], notes: list[str]) -> dict[str, Any]:
    _check(_IgnoredOAuth, table, "oauth")
    kept = dict(table)
    for key, instead in OAUTH_KEYS.items():
        if key in kept and key not in keys:
            del kept[key]
            notes.append(f"key 'oauth.{key}' is ignored: {instead}")
    return kept


def misplaced(stdio: bool, fields_set: set[str]) -> list[str]:
    """Keys set for the other transport (Codex refuses them; nbagent ignores them, saying so)."""
    if stdio:
        return [f"key '{key}' is ignored: it applies to HTTP servers only" for key in HTTP_ONLY if key in fields_set]
    return [f"key '{key}' is ignored: it applies to stdio servers only" for key in STDIO_ONLY if key in fields_set]
