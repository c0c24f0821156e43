"""Where a session's MCP servers and "Always" approvals are kept: in its ``Config``, each server
with the file it came from, so an "Always" is written next to the server's own table."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from nbagent.config import ApprovedDefinition, Config, ConfigError, McpServerConfig, load_config
from nbagent.core.approval import fingerprint
from nbagent.protocol import ToolSpec


def write_always(config: Config, cwd: str, spec: ToolSpec, warn: Callable[[str], None]) -> str | None:
    """Where an "Always" is kept: the file the tool's server came from, next to its table
    (the desk says which); for a tool no file defines, or when that file cannot be written
    (a person broke it meanwhile), this session only, and a warning why."""
    from nbagent.config.edit import record_always_approval  # the TOML writer, on first use

    if spec.server is None:
        why = "is not an MCP tool"
    else:
        try:
            written = record_always_approval(config, spec.server, spec.raw_name, cwd=cwd, definition=fingerprint(spec))
        except (ConfigError, OSError) as exc:  # the decision stands, recorded; only the file is not written
            why = f"could not be saved to its config file ({exc})"
        else:
            if written is not None:
                return str(written)
            why = f"comes from MCP server '{spec.server}', which was given to this session, not read from a config file"
    warn(f"{spec.name} {why}: 'always' applies to this session only")
    return None


def configure_servers(config: Config, servers: Mapping[str, McpServerConfig | None], files: Config | None) -> None:
    """Put ``servers`` (``None``: removed) in ``config``, each with the file it came from: the
    one ``files`` read it from, when that file defines it just so (``%agent mcp add`` wrote it
    there). A server code built (``Session(mcp_servers=...)``, ``AddMcpServer``) is in no file:
    an "Always" for it would write a table of its tools alone (no ``command``/``url``), so it
    holds for this session only.
    New dicts, never changed in place: a ``config`` handed to the session shares them."""
    configured, sources = dict(config.mcp_servers), dict(config.sources)
    for name, cfg in servers.items():
        sources.pop(name, None)
        if cfg is None:
            configured.pop(name, None)
            continue
        cfg, _ = config.requirements.admit(name, cfg)  # a server the allowlist does not admit stays off
        configured[name] = cfg
        if files is not None and name in files.sources and files.mcp_servers.get(name) == cfg:
            sources[name] = files.sources[name]
    config.mcp_servers, config.sources = configured, sources


def files_now(cwd: str) -> Config | None:
    """What the config files say now (one just written included); ``None`` when they do not load."""
    try:
        return load_config(cwd)
    except ConfigError:
        return None


def recorded_always(config: Config, spec: ToolSpec) -> ApprovedDefinition | None:
    server = config.mcp_servers.get(spec.server or "")
    return server.approved_definition_for(spec.raw_name) if server is not None else None
