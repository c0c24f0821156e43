"""Configuration: ``nbagent.toml`` (project) over ``.mcp.json`` over ``~/.nbagent/config.toml``
(user) over defaults, then environment overrides. Reads files; ``edit`` writes them.

Errors name the file and the key, and never include a secret's value. Modules by job: ``files``
reads TOML / JSON, ``mcp_json`` reads Claude Code's ``.mcp.json``, ``codex`` takes Codex's keys
nbagent reads differently or cannot honour, ``servers`` holds the model of one
``[mcp_servers.NAME]`` table; this module holds ``Config`` and the layering.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
)

from nbagent.config.errors import ConfigError, problems
from nbagent.config.files import outside, present, read_toml
from nbagent.config.mcp_json import MCP_JSON, MCP_JSON_TYPES, file_key, read_mcp_json
from nbagent.config.otel import OtelConfig
from nbagent.config.requirements import (
    RequirementError,
    Requirements,
    check_chosen,
    load_managed,
    load_requirements,
)
from nbagent.config.servers import ApprovedDefinition, McpServerConfig, ToolConfig, _Strict
from nbagent.config.trust import ProjectTrust, Unread, check_key, listed, not_read, trust_of, why_not_read
from nbagent.protocol import Policy
from nbagent.sandbox.policy import DEFAULT_MODE, SandboxMode, SandboxSettings, SandboxWorkspaceWrite

__all__ = [
    "MCP_JSON",
    "MCP_JSON_TYPES",
    "ApprovedDefinition",
    "Config",
    "ConfigError",
    "McpServerConfig",
    "ModelProviderConfig",
    "RequirementError",
    "Requirements",
    "ToolConfig",
    "default_home",
    "hold",
    "load_config",
    "provider_key",
]

SERVER_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")
PROJECT_FILE = "nbagent.toml"
USER_FILE = "config.toml"
OPENAI_BASE_URL = "https://api.openai.com/v1"
"""Where a provider with no ``base_url`` sends its requests."""


class ModelProviderConfig(_Strict):
    name: str | None = None
    """A display name."""
    base_url: str | None = None
    """The OpenAI-compatible endpoint, e.g. ``http://127.0.0.1:11434/v1`` for Ollama; OpenAI's when unset."""
    wire_api: Literal["responses", "chat"] = "responses"
    """``responses`` or ``chat`` (Chat Completions: Ollama, vLLM, llama.cpp, LM Studio)."""
    env_key: str | None = None
    """Environment variable holding the API key."""
    query_params: dict[str, str] = Field(default_factory=dict)
    """Sent with every request."""
    http_headers: dict[str, str] = Field(default_factory=dict)
    """Sent with every request."""
    request_max_retries: int = Field(default=4, ge=0, le=20)
    """Retries on 429, 5xx and connection errors, with backoff."""
    stream_idle_timeout_sec: float = Field(default=300.0, gt=0)
    """Seconds a response stream may stay silent before the request fails."""
    model_context_window: int | None = Field(default=None, gt=0)
    """Overrides the top-level key for models of this provider (a local server's own limit)."""
    model_auto_compact_token_limit: int | None = Field(default=None, gt=0)
    """Overrides the top-level key for models of this provider."""


class Config(_Strict):
    model: str | None = None
    """Model name, or ``replay:PATH`` for the scripted model."""
    model_provider: str = "openai"
    """A name under ``[model_providers]`` (``openai`` is built in)."""
    model_providers: dict[str, ModelProviderConfig] = Field(default_factory=dict)
    """OpenAI-compatible endpoints by name."""
    approval_policy: Policy = "on-request"
    """When calls need a person's approval: ``untrusted``, ``on-request``, ``never`` (declined,
    never asked) or ``full-auto``."""
    instructions: str | None = None
    """Extra system instructions prepended to every request."""
    model_context_window: int | None = Field(default=None, gt=0)
    """Tokens the model accepts; unset, known OpenAI models use their published window."""
    model_auto_compact_token_limit: int | None = Field(default=None, gt=0)
    """Compact the model's view before a request would pass this; unset, 90 % of the window."""
    project_doc_max_bytes: int = Field(default=32_768, ge=0)
    """Cap on the combined ``AGENTS.md`` text the model sees (Codex's key and default)."""
    project_doc_fallback_filenames: list[str] = Field(default_factory=list)
    """Names tried after ``AGENTS.md`` in each folder (e.g. ``CLAUDE.md``)."""
    project_root_markers: list[str] = Field(default_factory=lambda: [".git"])
    """What marks the project root, where the search for ``AGENTS.md`` starts."""
    mcp_servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    """MCP servers by name."""
    tool_output_max_bytes: int = Field(default=16_384, ge=256)
    """Cap on what the model sees of one tool result."""
    rollout_output_max_bytes: int = Field(default=1_048_576, ge=1024)
    """What the rollout keeps of one result's blocks."""
    server_instructions_max_bytes: int = Field(default=4096, ge=0)
    """Cap on each MCP server's ``instructions`` passed to the model."""
    approval_timeout_sec: float | None = Field(default=None, gt=0)
    """Unanswered approvals are denied after this long; ``None`` waits until interrupted."""
    elicitation_timeout_sec: float = Field(default=600.0, gt=0)
    """Unanswered elicitations are cancelled after this long."""
    max_tool_rounds: int = Field(default=50, ge=1)
    """Model rounds per turn before the turn fails."""
    max_model_tools: int = Field(default=128, ge=2)
    """Most tools one model request carries (OpenAI's APIs refuse more than 128); past it the
    request carries the non-MCP tools, ``search_tools`` and the MCP tools in view. A catalogue
    with more MCP tools than this sanitises each one's schema as it first goes into a request."""
    parallel_tool_calls: bool = True
    """Let known-safe read-only calls run together."""
    mcp_oauth_credentials_store: Literal["auto", "file", "keyring"] = "auto"
    """Where OAuth tokens of MCP servers are kept: ``keyring`` (the OS keyring), ``file`` (0600
    files under the home) or ``auto`` (the keyring when available, else files), as in Codex."""
    mcp_oauth_callback_port: int | None = Field(default=None, ge=1, le=65535)
    """Fixed 127.0.0.1 port for the OAuth login callback; ``None`` takes an ephemeral one."""
    home: str | None = None
    """Where threads live; ``$NBAGENT_HOME`` or ``~/.nbagent`` when unset."""
    sandbox_mode: SandboxMode = DEFAULT_MODE
    """Codex's sandbox for every stdio MCP server: ``read-only``, ``workspace-write`` (writes only
    in the workspace, no network) or ``danger-full-access`` (no sandbox)."""
    sandbox_workspace_write: SandboxWorkspaceWrite = Field(default_factory=SandboxWorkspaceWrite)
    """What ``workspace-write`` adds: ``writable_roots``, ``network_access``."""
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    """``[sandbox] deny_read``: more paths no sandboxed process may read."""
    otel: OtelConfig = Field(default_factory=OtelConfig)
    """``[otel]``: the audit trail exported as OpenTelemetry log records (Codex's keys; :mod:`nbagent.config.otel`)."""
    projects: dict[str, ProjectTrust] = Field(default_factory=dict)
    """Folders (absolute paths) whose ``nbagent.toml`` and ``.mcp.json`` are read (``trusted``)
    or never read (``untrusted``); only the user file says (``nbagent.config.trust``)."""

    sources: dict[str, str] = Field(default_factory=dict, exclude=True)
    """Internal: which file each MCP server (``mcp_servers.NAME``) came from."""
    workspace: str | None = Field(default=None, exclude=True)
    """Internal: the folder the config was loaded for (the session's), the sandbox's workspace."""
    api_key: str | None = Field(default=None, exclude=True, repr=False)
    """From the environment only; never written anywhere."""
    requirements: Requirements = Field(default_factory=Requirements, exclude=True)
    """Internal: the administrator's ``requirements.toml`` this config was held to (:mod:`nbagent.config.requirements`)."""
    _notes: list[str] = PrivateAttr(default_factory=list)
    """What the files said that is ignored, beyond the server tables' own keys."""
    _unread: Unread | None = PrivateAttr(default=None)

    @property
    def unread(self) -> Unread | None:
        """The working directory's config files left unread because the folder is not trusted
        (each is a warning too): what "no tools" is owed to, said where it is said."""
        return self._unread

    @field_validator("project_doc_fallback_filenames", "project_root_markers")
    @classmethod
    def _plain_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
                raise ValueError(f"{name!r} must be a plain file name, not a path")
        return names

    @field_validator("projects")
    @classmethod
    def _absolute_folders(cls, projects: dict[str, ProjectTrust]) -> dict[str, ProjectTrust]:
        for folder in projects:
            check_key(folder)
        return projects

    @field_validator("mcp_servers")
    @classmethod
    def _server_names(cls, servers: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in servers:
            if not SERVER_NAME.match(name):
                raise ValueError(f"server name {name!r} must match [a-zA-Z0-9_-]+")
        return servers

    @property
    def warnings(self) -> list[str]:
        """Every key nbagent reads but does not honour, one line each naming where it is, the
        server and the key: a session announces them as warnings."""
        notes = list(self._notes)
        for name, server in self.mcp_servers.items():
            where = self.sources.get(name)
            notes += [f"{where + ': ' if where else ''}MCP server {name!r}: {note}" for note in server.ignored]
        return notes

    @property
    def home_path(self) -> Path:
        return Path(self.home).expanduser() if self.home else default_home()

    def provider(self) -> ModelProviderConfig:
        if self.model_provider in self.model_providers:
            return self.model_providers[self.model_provider]
        if self.model_provider == "openai":
            return ModelProviderConfig(name="openai")
        raise ConfigError(
            f"model_provider = {self.model_provider!r} names no table [model_providers.{self.model_provider}]"
        )

    def require_model(self) -> str:
        """The configured model, or an error saying exactly what to set."""
        if self.model:
            return self.model
        raise ConfigError(
            "no model configured. Set one of: OPENAI_API_KEY plus model = \"gpt-5.1\" (or NBAGENT_MODEL); "
            "a local server with [model_providers.local] base_url = \"http://127.0.0.1:11434/v1\", "
            "model_provider = \"local\" and model = \"llama3.2\"; or model = \"replay:FILE\" for a scripted model "
            "(-m replay:FILE on the command line)"
        )


def default_home() -> Path:
    return Path(os.environ.get("NBAGENT_HOME") or Path.home() / ".nbagent").expanduser()


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _merge_layer(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """One file over the layers below. A server table naming its own ``command`` or ``url`` is a
    new definition and replaces the one below (it inherits no env, cwd or headers meant for
    another program); one without refines the server below key by key."""
    merged = _merge(base, over)
    servers = over.get("mcp_servers")
    if isinstance(servers, dict) and isinstance(merged.get("mcp_servers"), dict):
        for name, entry in servers.items():
            if isinstance(entry, dict) and ("command" in entry or "url" in entry):
                merged["mcp_servers"][name] = entry
    return merged


def _without_orphan_settings(
    data: dict[str, Any], below: dict[str, Any], origin: str
) -> tuple[dict[str, Any], list[str]]:
    """``data`` without the server tables that only refine a server no file below defines, and a
    note for each. An "Always" for a ``.mcp.json`` server is written to ``nbagent.toml`` as such a
    table; once the server leaves ``.mcp.json`` the table defines nothing, and the folder must
    still load."""
    servers = data.get("mcp_servers")
    defined = below.get("mcp_servers")
    defined = defined if isinstance(defined, dict) else {}
    if not isinstance(servers, dict):
        return data, []
    orphans = [
        name for name, entry in servers.items()
        if isinstance(entry, dict) and "command" not in entry and "url" not in entry and name not in defined
    ]  # fmt: skip
    if not orphans:
        return data, []
    notes = [
        f"{origin}: [mcp_servers.{name}] names no command or url, and no other config file defines MCP server "
        f"{name!r} (it holds only {', '.join(sorted(servers[name])) or 'nothing'}): ignored"
        for name in orphans
    ]
    kept = {name: entry for name, entry in servers.items() if name not in orphans}
    return {**data, "mcp_servers": kept}, notes


def _validate(data: dict[str, Any], origin: str) -> Config:
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        name = file_key if origin.endswith(MCP_JSON) else str  # the key as the file spells it
        raise ConfigError(f"{origin}: {problems(exc, name)}") from None


def _origin_of(key: str, layers: list[tuple[str, dict[str, Any]]], overrides: dict[str, Any] | None) -> str | None:
    """The layer the merged value of top-level ``key`` came from, for an error found only after merging."""
    if overrides and overrides.get(key) is not None:
        return "overrides"
    return next((origin for origin, data in reversed(layers) if key in data), None)


def load_config(
    cwd: str | Path | None = None,
    *,
    overrides: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
) -> Config:
    """Merge defaults, user file, ``.mcp.json``, project file, the administrator's
    ``managed_config.toml``, environment and ``overrides``, held to ``requirements.toml``
    (:mod:`nbagent.config.requirements`): an override it rules out is refused, a file's value
    falls back with a warning.

    Each file is validated on its own first, so an error names the file it is in.
    """
    env = os.environ if environ is None else environ
    cwd_path = Path(cwd or os.getcwd())
    home = Path(env.get("NBAGENT_HOME") or Path.home() / ".nbagent").expanduser()
    layers: list[tuple[str, dict[str, Any]]] = []
    notes: list[str] = []
    requirements = load_requirements(notes)
    chosen = {k: v for k, v in (overrides or {}).items() if v is not None}
    check_chosen(requirements, chosen)
    user = home / USER_FILE
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    written: dict[str, dict[str, str]] = {}
    projects: dict[str, ProjectTrust] = {}
    if user_read := present(user):
        merged = read_toml(user)
        layers.append((str(user), merged))
        below = _validate(merged, str(user))
        projects = below.projects
        sources = dict.fromkeys(below.mcp_servers, str(user))
    project_files = [path for path in (cwd_path / MCP_JSON, cwd_path / PROJECT_FILE) if path.is_file()]
    try:
        verdict = trust_of(cwd_path, listed(projects, env)) if project_files else None
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    trust_refused = verdict is not None and verdict.level == "trusted" and not requirements.allow_trusting_folders
    for path in project_files:
        if trust_refused:
            notes.append(f"{path}: not read: {_no_trusting(requirements)}")
        elif verdict is None or verdict.level != "trusted":
            notes.append(not_read(path, cwd_path.resolve(), verdict, user))
        elif why := outside(path, verdict.folder):
            notes.append(f"{path}: not read: {why}")
        elif path.name == MCP_JSON:
            servers, notes_here, written = read_mcp_json(path, env)
            notes += notes_here
            layers.append((str(path), servers))
        else:
            layers.append((str(path), read_toml(path)))

    layers += load_managed(notes)
    for origin, data in layers[1 if user_read else 0:]:
        if "projects" in data:
            raise ConfigError(f"{origin}: key 'projects': only {user} says which folders are trusted")
        data, notes_here = _without_orphan_settings(data, merged, origin)
        notes += notes_here
        # Validated over the layers below (already valid), so an error is this file's own, and
        # a table that overrides one key of a lower file's table is not rejected as incomplete.
        merged = _merge_layer(merged, data)
        _validate(merged, origin)
        for name in data.get("mcp_servers", {}) or {}:
            sources[name] = origin
    env_layer: dict[str, Any] = {}
    if env.get("NBAGENT_MODEL"):
        env_layer["model"] = env["NBAGENT_MODEL"]
    if env.get("NBAGENT_HOME"):
        env_layer["home"] = env["NBAGENT_HOME"]
    if env.get("OPENAI_BASE_URL") and merged.get("model_provider", "openai") == "openai":
        env_layer["model_providers"] = {"openai": {"base_url": env["OPENAI_BASE_URL"]}}
    merged = _merge(merged, env_layer)
    if overrides:
        merged = _merge(merged, chosen)
    origin = " + ".join([o for o, _ in layers] + ["environment"] + (["overrides"] if overrides else []))
    config = _validate(merged, origin)
    if trust_refused:
        config._unread = Unread(project_files, _no_trusting(requirements))
    elif project_files and (verdict is None or verdict.level != "trusted"):
        config._unread = Unread(project_files, why_not_read(cwd_path.resolve(), verdict, user))
    config.sources = sources
    config.workspace = str(cwd_path.resolve())
    config.requirements = requirements
    config._notes = notes + hold(config)
    for name, seen in written.items():
        if name in config.mcp_servers:
            config.mcp_servers[name]._written = seen
    try:
        config.api_key = provider_key(config, env)
    except ConfigError as exc:
        raise ConfigError(f"{_origin_of('model_provider', layers, overrides) or origin}: {exc}") from None
    return config


def hold(config: Config) -> list[str]:
    """Bring ``config`` (a ``Config``, changed in place) within its requirements: each value a
    file or the environment set that they rule out falls back to an allowed one, each server
    they do not admit is disabled; a warning for each."""
    req: Requirements = config.requirements
    notes: list[str] = []
    for key, field in (("allowed_approval_policies", "approval_policy"), ("allowed_sandbox_modes", "sandbox_mode")):
        value, note = req.fallback(key, field, getattr(config, field))
        if note:
            setattr(config, field, value)
            notes.append(note)
    if config.model:
        config.model, note = req.fallback("allowed_models", "model", config.model)
        notes += [note] if note else []
    if req.model_providers is not None:
        if config.model_provider not in req.model_providers:
            notes.append(f"{req.check_provider(config.model_provider, None)}: using {next(iter(req.model_providers))!r}")
            config.model_provider = next(iter(req.model_providers))
        pinned = req.model_providers[config.model_provider].base_url
        provider = config.model_providers.get(config.model_provider)
        if provider is None:
            config.model_providers = {**config.model_providers,
                                      config.model_provider: ModelProviderConfig(base_url=pinned)}
        elif why := req.check_provider(config.model_provider, provider.base_url):
            notes.append(f"{why}: using it")
            config.model_providers = {**config.model_providers,
                                      config.model_provider: provider.model_copy(update={"base_url": pinned})}
    servers = dict(config.mcp_servers)
    for name, cfg in config.mcp_servers.items():
        servers[name], here = req.admit(name, cfg)
        where = config.sources.get(name)
        notes += [f"{where}: {note}" if where else note for note in here]
    config.mcp_servers = servers
    return notes


def _no_trusting(requirements: Requirements) -> str:
    return (f"trusting a folder is not allowed by requirements: allow_trusting_folders = false in "
            f"{requirements.source('allow_trusting_folders')}")


def provider_key(config: Config, environ: Mapping[str, str] | None = None) -> str | None:
    """The API key of ``config``'s provider: only ever read from the environment."""
    env = os.environ if environ is None else environ
    provider = config.provider()
    key_var = provider.env_key or ("OPENAI_API_KEY" if config.model_provider == "openai" else None)
    return env.get(key_var) if key_var else None

