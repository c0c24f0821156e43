"""The models of one ``[mcp_servers.NAME]`` table and of what an "Always" records in it.

Codex's keys with Codex's meaning; those nbagent reads differently or cannot honour are taken by
:mod:`nbagent.config.codex`. :mod:`nbagent.config` layers files of these into a ``Config``.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

from nbagent.config import codex
from nbagent.config.oauth import OAuthSettings
from nbagent.protocol import ApprovalMode
from nbagent.sandbox.policy import SandboxMode, SandboxWorkspaceWrite


class _Strict(BaseModel):
    """Unknown keys, values of another type (``enabled = "false"``) and NaN or infinite numbers
    are errors: a config value is never silently read as something else."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class ApprovedDefinition(_Strict):
    """Hashes of the parts of a tool definition an "always" approved, one per part, so a
    changed definition can be named ("its description changed") without storing its text."""

    description: str
    """Hash of the tool's description when it was approved."""
    input_schema: str
    """Hash of its input schema."""
    annotations: str
    """Hash of its annotations."""
    title: str | None = None
    """Hash of its title (``None`` in an entry written before titles were recorded: then the
    title is not compared, as an entry with no definition is honoured by name)."""


class ToolConfig(_Strict):
    approval_mode: ApprovalMode | None = None
    """This tool's approval mode (values as ``default_tools_approval_mode``); "Always" in an
    approval panel writes ``approve`` here."""
    approved_definition: ApprovedDefinition | None = None
    """Written with "always": ``approve`` holds only while the server's definition matches."""


class McpServerConfig(_Strict):
    """One ``[mcp_servers.NAME]`` table: every key Codex accepts, with Codex's meaning (those
    nbagent cannot honour are dropped with a warning, see :mod:`nbagent.config.codex`), plus
    ``trusted``, ``protocol``, ``sampling`` and ``env_clear_parent``."""

    command: str | None = None
    """Program of a stdio server."""
    args: list[str] = Field(default_factory=list)
    """Its arguments."""
    env: dict[str, str] = Field(default_factory=dict)
    """Set in the server's (otherwise cleared) environment. Values are never logged."""
    env_vars: list[str] = Field(default_factory=list)
    """Names of the user's environment variables passed through to the server."""
    env_clear_parent: bool = True
    """Start the server under a launcher whose environment is the server's own, so the parent
    process the server can read holds no secret (docs/security.md, "Processes servers start")."""
    cwd: str | None = None
    """Working directory of a stdio server (``~`` expanded); the session's when unset."""
    url: str | None = None
    """Streamable HTTP (or SSE) endpoint of an HTTP server."""
    http_headers: dict[str, str] = Field(default_factory=dict)
    """Fixed headers sent to an HTTP server."""
    env_http_headers: dict[str, str] = Field(default_factory=dict)
    """Header name -> environment variable holding its value."""
    bearer_token_env_var: str | None = None
    """Environment variable whose value is sent as ``Authorization: Bearer``."""
    scopes: list[str] | None = None
    """OAuth scopes to request when logging in to this HTTP server (Codex's ``scopes``)."""
    oauth_resource: str | None = None
    """The ``resource`` (RFC 8707) to ask tokens for, when it differs from ``url``."""
    oauth: OAuthSettings | None = None
    """OAuth client settings (``[mcp_servers.NAME.oauth]``)."""
    transport: Literal["stdio", "http", "sse"] | None = None
    """Inferred from ``command`` / ``url`` when absent."""
    protocol: Literal["auto", "legacy", "2026-07-28"] = "auto"
    """``auto`` (2026-07-28 if the server offers it, else the legacy handshake), ``legacy`` or ``2026-07-28``."""
    startup_timeout_sec: float = 30.0
    """Seconds to start, initialise and list tools."""
    startup_timeout_ms: int | None = Field(default=None, gt=0)
    """Codex's other spelling of the startup timeout; ``startup_timeout_sec`` wins when both are set."""
    tool_timeout_sec: float = 300.0
    """Seconds one call may take; time waiting for a person's elicitation answer does not count."""
    enabled: bool = True
    """``false``: configured but not started."""
    required: bool = False
    """This server failing to start is an error (``nbagent tools`` exits non-zero)."""
    enabled_tools: list[str] | None = None
    """Allow list of raw tool names; all when unset."""
    disabled_tools: list[str] = Field(default_factory=list)
    """Deny list of raw tool names, applied after ``enabled_tools``."""
    default_tools_approval_mode: ApprovalMode = "auto"
    """``auto`` (from annotations), ``prompt`` (always ask), ``writes`` (ask unless
    ``readOnlyHint``) or ``approve`` (never ask)."""
    tools: dict[str, ToolConfig] = Field(default_factory=dict)
    """Per-tool settings, by raw tool name."""
    trusted: bool = False
    """Let this server's annotations (e.g. ``readOnlyHint``) relax approval defaults."""
    sampling: bool = False
    """Allow ``sampling/createMessage`` requests from this server (declined by default)."""
    sandbox_mode: SandboxMode | None = None
    """This stdio server's sandbox, over the top-level ``sandbox_mode`` (docs/security.md, "Sandbox")."""
    sandbox_workspace_write: SandboxWorkspaceWrite | None = None
    """Its ``[sandbox_workspace_write]`` keys, each over the top-level table's."""

    _ignored: list[str] = PrivateAttr(default_factory=list)
    _disabled_by: str | None = PrivateAttr(default=None)
    """``disabled by requirements (FILE)`` when the administrator's allowlist does not admit it."""
    _written: dict[str, str] = PrivateAttr(default_factory=dict)
    """Each value a ``${VAR}`` of ``.mcp.json`` made (the variable's own, and the whole text) ->
    as the file writes it."""

    @model_validator(mode="wrap")
    @classmethod
    def _codex_keys(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> McpServerConfig:
        """Read a table as Codex would; remember what was ignored, to warn about it."""
        if not isinstance(data, dict):
            return handler(data)
        data, notes = codex.translate(data, frozenset(OAuthSettings.model_fields))
        server: McpServerConfig = handler(data)
        stdio = server.transport == "stdio" if server.transport else bool(server.command)
        server._ignored = notes + codex.misplaced(stdio, server.model_fields_set)
        return server

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError("exactly one of 'command' (stdio) or 'url' (HTTP) must be set")
        if self.transport is None:
            self.transport = "stdio" if self.command else "http"
        elif (self.transport == "stdio") != bool(self.command):
            needs = "'command'" if self.transport == "stdio" else "'url'"
            raise ValueError(f"transport '{self.transport}' needs {needs}")
        if self.startup_timeout_ms is not None and "startup_timeout_sec" not in self.model_fields_set:
            self.startup_timeout_sec = self.startup_timeout_ms / 1000
        return self

    @property
    def disabled_by(self) -> str | None:
        """Why requirements keep this server from running, or ``None``."""
        return self._disabled_by

    @property
    def ignored(self) -> list[str]:
        """What this table sets that nbagent does not honour, one sentence each naming the key."""
        return list(self._ignored)

    @property
    def expanded(self) -> list[str]:
        """Every value a ``${VAR}`` of its file put in this table, and each variable's own."""
        return list(self._written)

    def as_written(self, value: Any) -> Any:
        """``value`` (a string, or strings in lists and tables' values) as its file writes it:
        ``${VAR}`` where a variable was expanded, so nbagent never shows what one held."""
        if isinstance(value, str):
            return self._written.get(value, value)
        if isinstance(value, list):
            return [self.as_written(item) for item in value]
        if isinstance(value, dict):
            return {key: self.as_written(item) for key, item in value.items()}
        return value

    @field_validator("url")
    @classmethod
    def _web_url(cls, url: str | None) -> str | None:
        """An HTTP server is reached over HTTP: ``ftp://`` or ``file://`` would only fail at start."""
        if url is not None and not re.match(r"https?://[^/\s]", url, re.IGNORECASE):
            raise ValueError(f"{url!r} is not an http:// or https:// URL")
        return url

    @field_validator("startup_timeout_sec", "tool_timeout_sec")
    @classmethod
    def _positive(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("must be a positive number of seconds")
        return value

    def approval_mode_for(self, tool: str) -> ApprovalMode:
        per_tool = self.tools.get(tool)
        if per_tool and per_tool.approval_mode:
            return per_tool.approval_mode
        return self.default_tools_approval_mode

    def approved_definition_for(self, tool: str) -> ApprovedDefinition | None:
        """The definition an "always" approved for this tool, while it is still ``approve``."""
        per_tool = self.tools.get(tool)
        if per_tool is None or per_tool.approval_mode != "approve":
            return None
        return per_tool.approved_definition

    def tool_enabled(self, tool: str) -> bool:
        if self.enabled_tools is not None and tool not in self.enabled_tools:
            return False
        return tool not in self.disabled_tools
