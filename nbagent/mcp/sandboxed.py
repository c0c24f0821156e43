"""The sandbox one stdio server runs in: its settings over the session's, made concrete.

Package runners (``npx``, ``uvx``) fetch the package on their first start, which needs the
network and a writable cache. Each such server gets its own cache under nbagent's home
(``sandbox-cache/NAME``), writable in every mode: the first start fills it with the network
on; once it holds something, later starts run offline from it (``npm_config_offline``,
``UV_OFFLINE``) with the network as the policy says. Removing the folder resolves anew.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from nbagent.config import Config, McpServerConfig, default_home
from nbagent.sandbox import SandboxPolicy, SandboxWorkspaceWrite, resolve

RUNNERS: dict[str, tuple[str, str, str]] = {
    "npx": ("npm", "npm_config_cache", "npm_config_offline"),
    "npm": ("npm", "npm_config_cache", "npm_config_offline"),
    "uvx": ("uv", "UV_CACHE_DIR", "UV_OFFLINE"),
    "uv": ("uv", "UV_CACHE_DIR", "UV_OFFLINE"),
}
"""Program -> (cache folder, the variable naming its cache, the variable that keeps it offline)."""
CACHE_DIR = "sandbox-cache"
SANDBOX_STATE_META = "codex/sandbox-state-meta"
"""Codex's experimental capability: a server declaring it gets the sandbox in each call's ``_meta``."""


def server_policy(name: str, cfg: McpServerConfig, config: Config | None) -> SandboxPolicy:
    """The policy ``name`` runs under: per-server keys over the top-level ones."""
    top = config or Config()
    mode = cfg.sandbox_mode or top.sandbox_mode
    table = top.sandbox_workspace_write
    if cfg.sandbox_workspace_write is not None:
        own = cfg.sandbox_workspace_write
        table = SandboxWorkspaceWrite.model_validate(
            {**table.model_dump(), **own.model_dump(include=own.model_fields_set)}
        )
    home = top.home_path if config is not None else default_home()
    caches: tuple[str, ...] = ()
    env: dict[str, str] = {}
    network: bool | None = None
    runner = RUNNERS.get(os.path.basename(cfg.command or ""))
    if runner is not None and mode != "danger-full-access":
        folder, cache_var, offline_var = runner
        cache = home / CACHE_DIR / name / folder
        caches = (str(cache),)
        env[cache_var] = str(cache)
        if cache.is_dir() and any(cache.iterdir()):
            env[offline_var] = "true" if folder == "npm" else "1"
        else:
            network = True  # the first start resolves the package
    workspace = config.workspace if config is not None and config.workspace else os.getcwd()
    return resolve(
        mode, table, workspace=Path(workspace), home=home, deny_read=top.sandbox.deny_read,
        caches=caches, env=env, network=network,
    )  # fmt: skip


def sandbox_meta(name: str, cfg: McpServerConfig, config: Config | None, experimental: dict[str, Any]) -> dict[str, Any]:
    """``_meta`` for a ``tools/call``: Codex's ``codex/sandbox-state-meta`` object, for a server
    that declared the capability, so a server written for Codex works unchanged; else nothing."""
    if SANDBOX_STATE_META not in experimental or cfg.transport != "stdio":
        return {}
    policy = server_policy(name, cfg, config)
    state = {"sandboxPolicy": policy.codex_policy(), "sandboxCwd": policy.workspace,
             "codexLinuxSandboxExe": None, "useLegacyLandlock": False}  # fmt: skip
    return {SANDBOX_STATE_META: state}


def permissions(config: Config) -> str:
    """The paragraph of the model's instructions that says what the sandbox allows (Codex tells
    its model in a "permissions" message): the mode, the writable roots, the network, the
    servers with a mode of their own, and that ``run_python`` is outside it."""
    servers = {name: cfg for name, cfg in config.mcp_servers.items() if cfg.enabled and cfg.transport == "stdio"}
    top = server_policy("", McpServerConfig(command="-"), config)
    if top.sandboxed:
        lines = [f"Permissions: the MCP servers nbagent starts run in the sandbox mode {top.sandbox_mode}."]
    else:
        lines = ["Permissions: the MCP servers nbagent starts run without a sandbox (danger-full-access)."]
    if top.sandbox_mode == "workspace-write":
        lines.append(
            f"They may write only in {', '.join(top.writable_roots)} and their own temporary folder "
            f"(.git stays read-only); network access is {'on' if top.network_access else 'off'}."
        )
    elif top.sandbox_mode == "read-only":
        lines.append("They may read files but write nothing outside their own temporary folder; network access is off.")
    if top.sandboxed:
        lines.append("Secrets (such as ~/.ssh, cloud credentials and Jupyter's kernel files) are hidden from them.")
    own = [f"{name}: {server_policy(name, cfg, config).describe()}" for name, cfg in servers.items() if cfg.sandbox_mode]
    if own:
        lines.append(f"Servers with their own sandbox: {'; '.join(own)}.")
    lines.append("Notebook tools such as run_python run in the live kernel, outside any sandbox.")
    return " ".join(lines)


def exited_hint(name: str, cfg: McpServerConfig, config: Config | None) -> str:
    """Said after "the server exited at start" when it ran in a sandbox: a denial the runtime
    cannot see may be why, and these are the keys that give it more."""
    if cfg.transport != "stdio":
        return ""
    policy = server_policy(name, cfg, config)
    if not policy.sandboxed:
        return ""
    return (
        f"; it ran in the sandbox {policy.describe()}: if it needs more, set writable_roots or network_access "
        f'under [mcp_servers.{name}.sandbox_workspace_write], or sandbox_mode = "danger-full-access" '
        f"under [mcp_servers.{name}]"
    )
