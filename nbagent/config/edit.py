"""The one editor of config files: a server table added, replaced or removed, a tool's "always"
recorded, in the file the server came from, keeping the person's comments, order and layout.

TOML goes through tomlkit (a round-trip parser); ``.mcp.json`` keeps its key order. A file is
replaced whole by a rename, so a failure mid-write leaves the old file, never half of one, and
each edit reads and writes under a lock, so edits from several processes at once (two
``nbagent mcp add``, a kernel's "Always" during ``nbagent trust``) are all kept. A file that is
a link is edited where it leads (``edited_file``).
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.items import Comment, Table
from tomlkit.toml_document import TOMLDocument

from nbagent.config import (
    MCP_JSON,
    PROJECT_FILE,
    USER_FILE,
    ApprovedDefinition,
    Config,
    ConfigError,
    ToolConfig,
    default_home,
)
from nbagent.config.files import outside, present, read_json, read_text
from nbagent.config.trust import TrustLevel, folder_key

LAUNCH_KEYS = (
    "command", "args", "env", "env_vars", "cwd", "url", "http_headers", "env_http_headers",
    "bearer_token_env_var", "transport",
)  # fmt: skip
"""What says how a server starts; ``add`` over an existing server replaces these and keeps the
rest of its table (tool approvals, timeouts, enabled tools)."""


def layer_files(cwd: str | Path | None = None) -> list[Path]:
    """The files a server can come from, lowest layer first (the order ``load_config`` reads)."""
    here = Path(cwd or os.getcwd())
    return [default_home() / USER_FILE, here / MCP_JSON, here / PROJECT_FILE]


def project_file(cwd: str | Path | None = None) -> Path:
    return Path(cwd or os.getcwd()) / PROJECT_FILE


def user_file() -> Path:
    return default_home() / USER_FILE


def edited_file(path: Path) -> Path:
    """The file an edit of ``path`` reads and replaces: ``path``, or where it leads when it is a
    link, so the link stays one. A project file whose link leads out of its folder is refused,
    as it is not read (``load_config``): a copy replacing the link would be read, bringing the
    outside file's content into the folder. The user's ``config.toml`` is the person's own,
    wherever it leads (a dotfiles folder)."""
    if not path.is_symlink():
        return path
    present(path)  # a link loop or to nothing is an error naming it
    if path != user_file() and (why := outside(path, path.parent, "its folder")):
        raise ConfigError(f"{path}: not edited: {why}")
    return path.resolve()


@contextmanager
def locked(path: Path) -> Iterator[Path]:
    """Hold the lock on edits of ``path``: an ``flock`` on ``.NAME.lock`` beside the file edited
    (``edited_file``, which it yields), removed on release. The OS drops the lock with its
    process, so a crash never leaves the file locked; a waiter that locked a lock file removed
    meanwhile locks the current one instead."""
    path = edited_file(path)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # a new folder is nbagent's home, private
    lock = path.parent / f".{path.name}.lock"
    while True:
        fd = os.open(lock, os.O_RDONLY | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held, now = os.fstat(fd), os.stat(lock)
            if (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino):
                break
        except FileNotFoundError:
            pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield path
    finally:
        lock.unlink(missing_ok=True)
        os.close(fd)


def _write(path: Path, text: str) -> None:
    """Replace ``path`` by a rename of a finished temporary file, keeping the file's mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else None
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def parse_toml(path: Path) -> TOMLDocument:
    """``path`` as a tomlkit document (empty when the file does not exist)."""
    if not present(path):
        return tomlkit.document()
    try:
        return tomlkit.parse(read_text(path))
    except tomlkit.exceptions.ParseError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


@contextmanager
def editing(path: Path) -> Iterator[TOMLDocument]:
    """The document of ``path`` to change in place, under the lock; written back if the block
    changed it and ends normally."""
    with locked(path) as target:
        doc = parse_toml(target)
        before = doc.as_string()
        yield doc
        if doc.as_string() != before:
            _write(target, doc.as_string())


def _servers(doc: TOMLDocument) -> Any:
    """The document's ``mcp_servers`` table, created as a bare parent of ``[mcp_servers.NAME]``."""
    if "mcp_servers" not in doc:
        doc["mcp_servers"] = tomlkit.table(is_super_table=True)
    servers = doc["mcp_servers"]
    if not isinstance(servers, Mapping):
        raise ConfigError("key 'mcp_servers' is not a table")
    return servers


def toml_value(value: Any) -> Any:
    """A plain value as a tomlkit item: a table of scalars (``env``, headers) stays on one line;
    a table of tables (``tools``) becomes sub-tables."""
    if isinstance(value, Mapping):
        nested = any(isinstance(v, Mapping) for v in value.values())
        out = tomlkit.table() if nested else tomlkit.inline_table()
        for key, item in value.items():
            out[key] = toml_value(item)
        return out
    return value


def server_table(entry: Mapping[str, Any]) -> Table:
    """``[mcp_servers.NAME]`` holding ``entry`` (plain values, or tomlkit items kept as they are)."""
    table = tomlkit.table()
    for key, value in entry.items():
        table[key] = toml_value(value)
    return table


def put_server(path: Path, name: str, entry: Mapping[str, Any]) -> bool:
    """Set server ``name`` in the TOML file ``path``; True when it replaced one already there
    (whose launch keys go, the rest of its table staying where it was)."""
    with editing(path) as doc:
        servers = _servers(doc)
        existing = servers.get(name)
        if isinstance(existing, Table):
            for key in LAUNCH_KEYS:
                existing.pop(key, None)
            for key, value in entry.items():
                existing[key] = toml_value(value)
            return True
        servers[name] = server_table(entry)
        return False


def add_servers(doc: TOMLDocument, tables: Mapping[str, Table], settings: Mapping[str, Any] | None = None) -> None:
    """Append whole server tables (imported ones, with their own comments) to ``doc``, and
    top-level ``settings`` (placed before the tables)."""
    for key, value in (settings or {}).items():
        doc[key] = value
    servers = _servers(doc)
    for name, table in tables.items():
        servers[name] = table


def render_servers(tables: Mapping[str, Table], settings: Mapping[str, Any] | None = None) -> str:
    """The TOML ``add_servers`` would append, for a dry run."""
    doc = tomlkit.document()
    add_servers(doc, tables, settings)
    return doc.as_string()


def remove_server(path: Path, name: str) -> bool:
    """Delete server ``name`` from ``path`` (TOML, or ``.mcp.json``'s ``mcpServers``); False when
    the file holds no such server."""
    if not present(path):
        return False
    remove = _remove_json_server if path.name == MCP_JSON else _remove_toml_server
    with locked(path) as target:
        return remove(target, name)


def _remove_toml_server(path: Path, name: str) -> bool:
    doc = parse_toml(path)
    servers = doc.get("mcp_servers")
    if not isinstance(servers, Mapping) or name not in servers:
        return False
    _drop_comment_above(doc, servers, name)
    doc = tomlkit.parse(doc.as_string())  # the moved lines change positions tomlkit had indexed
    servers = doc["mcp_servers"]
    del servers[name]
    if not servers and isinstance(servers, Table) and servers.is_super_table():
        del doc["mcp_servers"]  # a bare parent left with no child would print as an empty [mcp_servers]
    text = doc.as_string()
    _write(path, text.rstrip("\n") + "\n" if text.strip() else "")  # the blank line that led to the last table goes with it
    return True


def _drop_comment_above(doc: TOMLDocument, servers: Any, name: str) -> None:
    """Delete the comment lines written directly above ``[mcp_servers.NAME]`` (no blank line
    between): they describe that server. tomlkit keeps a header's comment at the end of what
    comes before it (the previous server's last table, or the document before ``mcp_servers``),
    so the server's own last lines, the next header's comment, move up to take its place."""
    if not isinstance(servers[name], Table) or not isinstance(servers, Table):
        return
    keys = [key.key for key, _ in servers.value.body if key is not None]
    at = keys.index(name)
    if at > 0:
        body = _tail_body(servers[keys[at - 1]])
        end = len(body)
    elif servers.is_super_table():
        body = doc.body
        end = next(i for i, (key, _) in enumerate(body) if key is not None and key.key == "mcp_servers")
    else:
        return
    end = _strip_trailing_comments(body, end)
    own = _tail_body(servers[name])
    carried = own[_strip_trailing_comments(list(own), len(own)) :]
    body[end:end] = carried


def _tail_body(table: Table) -> list[Any]:
    """The body the lines just before the next header belong to: the last sub-table's, when the
    table ends with sub-tables (``[mcp_servers.a.tools.t]``)."""
    while True:
        body = table.value.body
        last = next((item for key, item in reversed(body) if key is not None), None)
        if not isinstance(last, Table):
            return body
        table = last


def _strip_trailing_comments(body: list[Any], end: int) -> int:
    """Delete the comment lines ending at ``end``; where they began."""
    while end > 0 and body[end - 1][0] is None and isinstance(body[end - 1][1], Comment):
        del body[end - 1]
        end -= 1
    return end


def _remove_json_server(path: Path, name: str) -> bool:
    text = read_text(path)
    data = read_json(path)
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict) or name not in servers:
        return False
    del servers[name]
    _write(path, json.dumps(data, indent=_json_indent(text), ensure_ascii=False) + "\n")
    return True


def _json_indent(text: str) -> int:
    """The indent the file already uses (2 when it cannot be told)."""
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" ")
        if stripped and len(stripped) < len(line):
            return len(line) - len(stripped)
    return 2


def record_always_approval(
    config: Config,
    server: str,
    tool: str,
    cwd: str | Path | None = None,
    *,
    definition: ApprovedDefinition | None = None,
) -> Path | None:
    """Write ``approval_mode = "approve"`` and the approved ``definition`` for one tool into the
    file its server came from, and into ``config`` (rebuilt: objects it shares stay untouched);
    the file written.

    Servers from ``.mcp.json`` (which has no such key) get the entry in the project's
    ``nbagent.toml``, read with it. A server no file defines (one code handed to a session) gets
    nothing and ``None``: a table of its tools alone would name no ``command`` or ``url``.
    """
    origin = config.sources.get(server)
    if origin is None:
        return None
    path = project_file(cwd) if origin.endswith(MCP_JSON) else Path(origin)
    with editing(path) as doc:
        servers = _servers(doc)
        entry = servers.setdefault(server, tomlkit.table(is_super_table=True))
        tools = entry.setdefault("tools", tomlkit.table(is_super_table=True))
        tool_table = tools.setdefault(tool, tomlkit.table())
        tool_table["approval_mode"] = "approve"
        if definition is not None:
            hashes = tomlkit.inline_table()
            hashes.update(definition.model_dump())
            tool_table["approved_definition"] = hashes
    server_config = config.mcp_servers.get(server)
    if server_config is not None:
        per_tool = ToolConfig(approval_mode="approve", approved_definition=definition)
        rebuilt = server_config.model_copy(update={"tools": {**server_config.tools, tool: per_tool}})
        config.mcp_servers = {**config.mcp_servers, server: rebuilt}
    return path


def record_trust(folder: str | Path, level: TrustLevel | None) -> tuple[Path, str]:
    """Write ``[projects."<folder>"] trust_level = level`` into the user file (``None`` removes
    the entry); the file and the folder as written. Only the user file says which folders are
    trusted, so this is the one writer of ``projects``."""
    path, key = user_file(), folder_key(folder)
    with editing(path) as doc:
        if "projects" not in doc:
            doc["projects"] = tomlkit.table(is_super_table=True)
        projects = doc["projects"]
        if not isinstance(projects, MutableMapping):
            raise ConfigError(f"{path}: key 'projects' is not a table")
        if level is None:
            projects.pop(key, None)
        else:
            entry = projects.setdefault(key, tomlkit.table())
            entry["trust_level"] = level
    return path, key
