"""Servers configured for Codex, Claude Code, Cursor or VS Code, read from those tools' own
files and translated to ``[mcp_servers.NAME]`` tables for ``nbagent.toml``.

A secret is never copied or shown: a variable reference (``${VAR}``, ``${env:VAR}``, VS Code's
``${input:ID}``) becomes the name of an environment variable nbagent reads at start-up
(``env_vars``, ``env_http_headers``, ``bearer_token_env_var``), and so does a value written out
that may be a secret (``nbagent.secrets.may_be_secret``), under a name the person is told. What
has no equivalent is left out and said, naming the file and the key; a server that cannot start
without it is skipped. A file of a folder (``.mcp.json``, ``.codex/config.toml``, the folder's
section of ``~/.claude.json``) is read only when the folder is trusted (``nbagent.config.trust``).
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError
from tomlkit.items import Table

from nbagent.config import MCP_JSON, MCP_JSON_TYPES, SERVER_NAME, ConfigError, McpServerConfig
from nbagent.config.edit import parse_toml, server_table, toml_value
from nbagent.config.errors import problems
from nbagent.config.files import read_json, read_text
from nbagent.mcp.wire import url_password
from nbagent.secrets import may_be_secret

Tool = Literal["codex", "claude", "cursor", "vscode"]
TOOLS: tuple[Tool, ...] = ("codex", "claude", "cursor", "vscode")


@dataclass
class Imported:
    name: str
    source: Path
    table: Table
    notes: list[str] = field(default_factory=list)
    """What of this server was not translated, each naming the file and the key."""


@dataclass
class Plan:
    """What ``import`` found: servers to add, servers it could not, and the files it read."""

    servers: list[Imported] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    read: list[Path] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    """Top-level keys about MCP servers (Codex's ``mcp_oauth_*``), same name and meaning."""
    unread: list[str] = field(default_factory=list)
    """Why each file (or part of one) of a folder not trusted was left unread."""


CODEX_SETTINGS = ("mcp_oauth_credentials_store", "mcp_oauth_callback_port")

Untrusted = Callable[[str, Path], "str | None"]
"""Why a file (or part of one) belonging to a folder is not read, naming the command that trusts
the folder; ``None`` when the folder is trusted."""


class _NotRead(str):
    """Part of a file left unread, its folder not trusted: the reason."""


_PROJECT_FILES = {
    "codex": ".codex/config.toml", "claude": MCP_JSON, "cursor": ".cursor/mcp.json", "vscode": ".vscode/mcp.json",
}  # fmt: skip


def _user_file(tool: Tool, home: Path) -> Path | None:
    """Where ``tool`` keeps the person's own servers (VS Code keeps none outside a folder)."""
    if tool == "codex":
        return Path(os.environ.get("CODEX_HOME") or home / ".codex").expanduser() / "config.toml"
    return {"claude": home / ".claude.json", "cursor": home / ".cursor" / "mcp.json"}.get(tool)


def source_files(tool: Tool, cwd: Path, home: Path | None = None) -> list[Path]:
    """Where ``tool`` keeps MCP servers, user-wide first, then the project's (which wins)."""
    user = _user_file(tool, home or Path.home())
    return [*([user] if user else []), cwd / _PROJECT_FILES[tool]]


def _folder(path: Path, cwd: Path) -> Path:
    """The folder a file that is not the person's own belongs to: the working directory for one
    inside it, else the file's own."""
    path, cwd = path.resolve(), cwd.resolve()
    return cwd if path.is_relative_to(cwd) else path.parent


def plan(
    tool: Tool, cwd: Path, files: list[Path] | None = None, *, untrusted: Untrusted, home: Path | None = None
) -> Plan:
    """The servers ``tool``'s files hold (``files``, or where ``tool`` keeps them), translated;
    of a folder's files, only a trusted folder's (``untrusted`` says why another is not read)."""
    home = home or Path.home()
    found = Plan()
    paths = files if files is not None else [p for p in source_files(tool, cwd, home) if p.is_file()]
    own = _user_file(tool, home)
    by_name: dict[str, Imported] = {}
    for path in paths:
        why = None if own is not None and path.resolve() == own.resolve() else untrusted(str(path), _folder(path, cwd))
        if why is not None:
            found.unread.append(why)
            continue
        found.read.append(path)
        if tool == "codex":
            doc = parse_toml(path)
            found.settings.update({key: doc[key] for key in CODEX_SETTINGS if key in doc})
        for item in (_codex_servers(path) if tool == "codex" else _json_servers(tool, path, cwd, home, untrusted)):
            if isinstance(item, _NotRead):
                found.unread.append(item)
                continue
            if isinstance(item, str):
                found.skipped.append(item)
                continue
            if item.name in by_name:
                item.notes.append(f"{path}: server '{item.name}' is also in {by_name[item.name].source}: this one is imported")
            by_name[item.name] = item
    found.servers = list(by_name.values())
    return found


# -- Codex: the same keys, copied with their comments --------------------------------------


def _codex_servers(path: Path) -> list[Imported | str]:
    """Codex's ``[mcp_servers.NAME]`` tables as they are: nbagent reads Codex's keys with
    Codex's meaning, so only an invalid table is refused."""
    doc = parse_toml(path)
    servers = doc.get("mcp_servers", {})
    out: list[Imported | str] = []
    if not isinstance(servers, Mapping):
        return [f"{path}: key 'mcp_servers' is not a table"]
    for name, table in servers.items():
        where = f"{path}: server '{name}'"
        if not isinstance(table, Table) and not isinstance(table, Mapping):
            out.append(f"{where}: not a table")
            continue
        copied = copy.deepcopy(table) if isinstance(table, Table) else server_table(dict(table))
        try:
            withheld = _withhold(name, copied, where)
        except _Skip as skip:
            out.append(f"{skip} (skipped)")
            continue
        checked = _check(name, copied.unwrap(), where)
        if isinstance(checked, str):
            out.append(checked)
        else:  # copied as Codex has it: nbagent reads the same keys, and warns about these at start
            out.append(Imported(name, path, copied, [*withheld, *(f"{where}: {note}" for note in checked.ignored)]))
    return out


def _check(name: str, entry: dict[str, Any], where: str) -> McpServerConfig | str:
    """The server as nbagent will read it, or why it cannot (naming the file, server and key)."""
    if not SERVER_NAME.match(name):
        return f"{where}: the name must match [a-zA-Z0-9_-]+ (skipped)"
    try:
        return McpServerConfig.model_validate(entry)
    except ValidationError as exc:
        return f"{where}: {problems(exc)} (skipped)"


# -- JSON tools: Claude Code, Cursor, VS Code ----------------------------------------------


@dataclass(frozen=True)
class _Var:
    """A reference to something nbagent takes from the environment at start-up."""

    name: str
    default: str | None = None
    hint: str | None = None
    """Why the person has to set it (a VS Code input's prompt)."""


_REF = re.compile(r"\$\{([^}]*)\}")
_FIXED = ("userHome", "workspaceFolder", "workspaceFolderBasename", "pathSeparator", "/")


def _env_name(text: str) -> str:
    name = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").upper() or "VALUE"
    return f"_{name}" if name[0].isdigit() else name


@dataclass
class _Refs:
    """How one tool's files spell references, and the values of the fixed ones."""

    tool: Tool
    cwd: Path
    home: Path
    inputs: dict[str, str] = field(default_factory=dict)

    def resolve(self, inner: str) -> _Var | str | None:
        """A variable, a fixed value, or None when nbagent has no equivalent."""
        if self.tool == "claude":
            match = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?", inner, re.DOTALL)
            return _Var(match.group(1), match.group(2)) if match else None
        kind, _, rest = inner.partition(":")
        if kind == "env" and rest:
            return _Var(rest)
        if kind == "input" and rest and self.tool == "vscode":
            prompt = self.inputs.get(rest)
            return _Var(_env_name(rest), hint=f"VS Code asks for input '{rest}'" + (f" ({prompt})" if prompt else ""))
        fixed = {
            "userHome": str(self.home), "workspaceFolder": str(self.cwd),
            "workspaceFolderBasename": self.cwd.name, "pathSeparator": os.sep, "/": os.sep,
        }  # fmt: skip
        return fixed.get(inner)

    def split(self, text: str) -> tuple[str, list[_Var], list[str]]:
        """``text`` with fixed references replaced; the variables and unknown references left."""
        variables: list[_Var] = []
        unknown: list[str] = []

        def sub(match: re.Match[str]) -> str:
            ref = self.resolve(match.group(1))
            if isinstance(ref, str):
                return ref
            if ref:
                variables.append(ref)
            else:
                unknown.append(match.group(0))
            return match.group(0)

        return _REF.sub(sub, text), variables, unknown


class _Skip(Exception):
    """The server cannot be written without what this names."""


# -- secrets written out: withheld, read from the environment instead -----------------------


def _withhold(name: str, table: Table, where: str) -> list[str]:
    """Move each value of ``table`` that may be a secret out of it, into the environment variable
    nbagent reads it from at start-up: an ``env`` value into ``env_vars`` under its own name, a
    header into ``env_http_headers`` as ``NBAGENT_<SERVER>_<HEADER>``, a bearer token (Codex's
    ``bearer_token``, an ``Authorization: Bearer`` header) into ``bearer_token_env_var`` as
    ``NBAGENT_<SERVER>_BEARER_TOKEN``. Returns a note naming each variable to set, never a value.
    A password in the url has no such variable: the server is skipped."""
    notes: list[str] = []

    def moved(what: str, var: str) -> None:
        notes.append(f"{where}: {what} is not copied (it may be a secret): set ${var} in nbagent's environment")

    url = table.get("url")
    if isinstance(url, str) and url_password(url) is not None:
        raise _Skip(f"{where}: a password in its url is not copied, and nbagent reads none from a variable: write "
                    f"the url without it and send the credential as a header (env_http_headers)")  # fmt: skip
    env = _strings(table.get("env"))
    for key in [key for key, value in env.items() if may_be_secret(key, value, header=False)]:
        del env[key]
        names = _entry(table, "env_vars", [])
        if key not in names:
            names.append(key)
        moved(f"env {key}", key)
    headers = _strings(table.get("http_headers"))
    token = table.get("bearer_token")
    auth = next((key for key in headers if key.lower() == "authorization"), "")
    if token is None and headers.get(auth, "")[:7].lower() == "bearer " and "bearer_token_env_var" not in table:
        token = headers.pop(auth)
    if isinstance(token, str):
        table.pop("bearer_token", None)
        moved("its bearer token", _entry(table, "bearer_token_env_var", _env_name(f"NBAGENT_{name}_BEARER_TOKEN")))
    for header in [key for key, value in headers.items() if may_be_secret(key, value, header=True)]:
        var = _env_name(f"NBAGENT_{name}_{header}")
        del headers[header]
        _entry(table, "env_http_headers", {})[header] = var
        moved(f"header {header}", var)
    for key in ("env", "http_headers"):
        if isinstance(table.get(key), Mapping) and not table[key]:
            del table[key]
    return notes


def _entry(table: Table, key: str, default: Any) -> Any:
    """``table[key]``, set to ``default`` first when absent (as tomlkit stores it, to edit in place)."""
    if key not in table:
        table[key] = toml_value(default)
    return table[key]


def _strings(value: Any) -> MutableMapping[str, str]:
    """A table of strings to edit in place; anything else is left for validation to refuse."""
    if isinstance(value, MutableMapping) and all(isinstance(v, str) for v in value.values()):
        return value
    return {}


@dataclass
class _Translation:
    where: str
    refs: _Refs
    entry: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def note(self, key: str, message: str) -> None:
        self.notes.append(f"{self.where}.{key}': {message}")

    def literal(self, key: str, value: Any) -> str:
        """A value that must be written as it is (command, args, url): no variable in it."""
        if not isinstance(value, str):
            raise _Skip(f"{self.where}.{key}': must be a string, got {type(value).__name__}")
        text, variables, unknown = self.refs.split(value)
        if variables or unknown:
            refs = ", ".join([f"${{{v.name}}}" for v in variables] + unknown)
            raise _Skip(f"{self.where}.{key}': uses {refs}, and nbagent.toml expands no variables there")
        return text

    def variable(self, key: str, value: Any) -> tuple[str | None, _Var | None]:
        """A value that may be one reference: ``(literal, None)``, ``(None, variable)``, or
        ``(None, None)`` when it mixes text and references (said, and left out)."""
        if not isinstance(value, str):
            raise _Skip(f"{self.where}.{key}': must be a string, got {type(value).__name__}")
        text, variables, unknown = self.refs.split(value)
        if unknown:
            self.note(key, f"{', '.join(unknown)} has no nbagent equivalent; left out")
            return None, None
        if not variables:
            return text, None
        var = variables[0]
        if len(variables) == 1 and _REF.fullmatch(text):
            return None, var
        self.note(key, "not translated (text and variables mixed: nbagent takes a value from one whole variable)")
        return None, None

    def remember(self, key: str, var: _Var) -> None:
        if var.hint:
            self.note(key, f"set ${var.name} in nbagent's environment: {var.hint}")
        if var.default is not None:  # never shown: a default may be the secret itself
            self.note(key, f"its default is not kept: set ${var.name}")


_HANDLED = {"type", "command", "args", "env", "url", "headers", "disabled", "cwd"}


def _translate(raw: Mapping[str, Any], t: _Translation) -> dict[str, Any]:
    kind = raw.get("type")
    if kind is not None and kind not in MCP_JSON_TYPES:
        raise _Skip(f"{t.where}.type': must be one of {', '.join(MCP_JSON_TYPES)}, got {kind!r}")
    if kind is not None and kind != ("stdio" if "command" in raw else "http"):
        t.entry["transport"] = kind  # what command / url do not already say
    if "command" in raw:
        t.entry["command"] = t.literal("command", raw["command"])
    if "args" in raw:
        if not isinstance(raw["args"], list):
            raise _Skip(f"{t.where}.args': must be a list of strings")
        t.entry["args"] = [t.literal(f"args[{i}]", arg) for i, arg in enumerate(raw["args"])]
    if "url" in raw:
        t.entry["url"] = t.literal("url", raw["url"])
    if "cwd" in raw:
        t.entry["cwd"] = t.literal("cwd", raw["cwd"])
    _env(raw.get("env"), t)
    _headers(raw.get("headers"), t)
    disabled = raw.get("disabled", False)
    if not isinstance(disabled, bool):
        raise _Skip(f"{t.where}.disabled': must be true or false, got {disabled!r}")
    if disabled:
        t.entry["enabled"] = False
    for key in raw:
        if key not in _HANDLED:
            what = "name the variables it sets in env_vars" if key == "envFile" else "nbagent has no such key"
            t.note(key, f"not translated ({what})")
    return t.entry


def _table_of(value: Any, key: str, t: _Translation) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _Skip(f"{t.where}.{key}': must be an object")
    return value


def _env(value: Any, t: _Translation) -> None:
    env: dict[str, str] = {}
    passed: list[str] = []
    for name, raw in _table_of(value, "env", t).items():
        literal, var = t.variable(f"env.{name}", raw)
        if literal is not None:
            env[name] = literal
        elif var is not None and (var.name == name or var.hint):
            passed.append(name)
            t.remember(f"env.{name}", _Var(name, var.default, var.hint))
        elif var is not None:
            t.note(f"env.{name}", f"not translated (it renames ${var.name}; nbagent passes variables under their own "
                   f"name: set ${name} and add it to env_vars)")  # fmt: skip
    if env:
        t.entry["env"] = env
    if passed:
        t.entry["env_vars"] = passed


def _headers(value: Any, t: _Translation) -> None:
    literal_headers: dict[str, str] = {}
    from_env: dict[str, str] = {}
    for header, raw in _table_of(value, "headers", t).items():
        key = f"headers.{header}"
        if header.lower() == "authorization" and isinstance(raw, str) and raw[:7].lower() == "bearer ":
            token, var = t.variable(key, raw[7:])
            if var is not None:
                t.entry["bearer_token_env_var"] = var.name
                t.remember(key, var)
                continue
            literal = raw if token is not None else None
        else:
            literal, var = t.variable(key, raw)
        if literal is not None:
            literal_headers[header] = literal
        elif var is not None:
            from_env[header] = var.name
            t.remember(key, var)
    if literal_headers:
        t.entry["http_headers"] = literal_headers
    if from_env:
        t.entry["env_http_headers"] = from_env


def _read_json(tool: Tool, path: Path) -> Any:
    if tool == "claude":
        return read_json(path)
    import json5  # Cursor and VS Code allow comments and trailing commas

    try:
        return json5.loads(read_text(path))
    except ValueError as exc:
        raise ConfigError(f"{path}: invalid JSON: {exc}") from None


def _server_groups(tool: Tool, path: Path, data: Any, cwd: Path) -> list[tuple[str, Any]]:
    """``(key path, servers)`` for each object of servers the file holds."""
    if not isinstance(data, Mapping):
        return [("", None)]
    if tool == "vscode":
        return [("servers", data.get("servers"))]
    groups = [("mcpServers", data.get("mcpServers"))] if "mcpServers" in data or path.name != ".claude.json" else []
    projects = data.get("projects") if tool == "claude" else None
    if isinstance(projects, Mapping):
        for folder in (str(cwd), str(cwd.resolve())):
            project = projects.get(folder)
            if isinstance(project, Mapping) and "mcpServers" in project:
                groups.append((f"projects.{folder}.mcpServers", project["mcpServers"]))
                break
    return groups


def _json_servers(tool: Tool, path: Path, cwd: Path, home: Path, untrusted: Untrusted) -> list[Imported | str]:
    data = _read_json(tool, path)
    refs = _Refs(tool, cwd, home, _inputs(data))
    out: list[Imported | str] = []
    for key, servers in _server_groups(tool, path, data, cwd):
        # Claude Code keeps a folder's own servers in ~/.claude.json too: they are the folder's.
        if key.startswith("projects.") and (why := untrusted(f"{path}: key '{key}'", cwd)) is not None:
            out.append(_NotRead(why))
            continue
        if not isinstance(servers, Mapping):
            out.append(f"{path}: key '{key or 'mcpServers'}' must be an object of servers")
            continue
        for name, raw in servers.items():
            out.append(_one_json_server(path, f"{path}: key '{key}.{name}", name, raw, refs))
    return out


def _one_json_server(path: Path, where: str, name: str, raw: Any, refs: _Refs) -> Imported | str:
    if not isinstance(raw, Mapping):
        return f"{where}': must be an object (skipped)"
    t = _Translation(where, refs)
    try:
        table = server_table(_translate(raw, t))
        withheld = _withhold(name, table, f"{path}: server '{name}'")
    except _Skip as skip:
        return f"{skip} (skipped)"
    checked = _check(name, table.unwrap(), where + "'")
    return checked if isinstance(checked, str) else Imported(name, path, table, [*t.notes, *withheld])


def _inputs(data: Any) -> dict[str, str]:
    """VS Code's ``inputs``: id -> the prompt it shows."""
    inputs = data.get("inputs") if isinstance(data, Mapping) else None
    if not isinstance(inputs, list):
        return {}
    return {
        str(i["id"]): str(i.get("description") or "")
        for i in inputs
        if isinstance(i, Mapping) and "id" in i
    }

