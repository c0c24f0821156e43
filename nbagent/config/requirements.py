"""Requirements an administrator sets and no user setting can loosen (Codex's ``requirements.toml``),
and the managed defaults beside them (``managed_config.toml``).

Both are read from ``/etc/nbagent/`` and from the Python environment's ``etc/nbagent/``
(``sys.prefix``, as ``jupyter --paths`` finds data), the first file to set a key winning, and
from nowhere the user running nbagent can write (``admin_owned``): a file there the user could
change binds no one, so it is not read and a warning says why. No environment variable names
another place: a test writes the file where nbagent looks (``SEARCH_PATH``, or a venv's own).

A value from a user-side file that a requirement rules out falls back to the first allowed
value, with a warning (as Codex does); a value someone chose for this run (a command-line flag,
``%agent policy``, a caller's override) is refused, the message naming the requirement, its file
and the allowed values (``RequirementError``).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from nbagent.config.errors import ConfigError, problems
from nbagent.config.files import present, read_toml
from nbagent.protocol import Policy
from nbagent.sandbox.policy import SandboxMode

McpServerConfig = Any
"""``nbagent.config.McpServerConfig``, named loosely: that module imports this one."""
REQUIREMENTS_FILE = "requirements.toml"
MANAGED_FILE = "managed_config.toml"
SEARCH_PATH: tuple[Path, ...] = (Path("/etc/nbagent"), Path(sys.prefix) / "etc" / "nbagent")
"""Where both files are looked for, strongest first (a test replaces it in-process)."""


class RequirementError(ConfigError):
    """A value someone chose that a requirement rules out; the message names the requirement,
    its file and what it allows."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class McpIdentity(_Strict):
    """What an allowed server is: a program (``command`` exactly, its arguments starting with
    ``args``) or an endpoint (``url``: same scheme, host and port, the path at or under it)."""

    command: str | None = None
    args: list[str] | None = None
    url: str | None = None

    @model_validator(mode="after")
    def _one(self) -> McpIdentity:
        if bool(self.command) == bool(self.url):
            raise ValueError("an identity names exactly one of 'command' or 'url'")
        if self.url and self.args is not None:
            raise ValueError("'args' goes with 'command', not 'url'")
        if self.url and not urlsplit(self.url).hostname:
            raise ValueError(f"{self.url!r} is not a URL with a host")
        return self

    def matches(self, cfg: McpServerConfig) -> bool:
        if self.command:
            args = self.args or []
            return cfg.command == self.command and cfg.args[: len(args)] == args
        return cfg.url is not None and url_within(cfg.url, self.url or "")

    def describe(self) -> str:
        if self.url:
            return f"url {self.url}"
        return "command " + " ".join([self.command or "", *(self.args or [])]) + (" ..." if self.args is not None else "")


class McpServerRequirement(_Strict):
    identity: McpIdentity


class ProviderRequirement(_Strict):
    base_url: str | None = None
    """The endpoint this provider must use; unset, the provider's own (OpenAI's for ``openai``)."""


class Limits(_Strict):
    """``[limits]``: what a user may spend. Codex's requirements have no such table; nbagent's own."""

    max_tokens_per_day: int | None = Field(default=None, ge=1)
    """Each user's model tokens (input plus output, every kernel of theirs) per UTC day; a turn
    that reaches it ends at its next model request."""


class Requirements(_Strict):
    """``requirements.toml``. Each key unset constrains nothing."""

    allowed_approval_policies: list[Policy] | None = Field(default=None, min_length=1)
    allowed_sandbox_modes: list[SandboxMode] | None = Field(default=None, min_length=1)
    mcp_servers: dict[str, McpServerRequirement] | None = None
    """Allowlist: a server runs only when its name is here and its identity matches."""
    allowed_models: list[str] | None = Field(default=None, min_length=1)
    model_providers: dict[str, ProviderRequirement] | None = None
    """Allowlist of provider names, each pinned to its ``base_url``."""
    allow_trusting_folders: bool = True
    """``false``: no folder's own ``nbagent.toml`` / ``.mcp.json`` is read, and trust commands refuse."""
    allow_trusted_servers: bool = True
    """``false``: ``trusted = true`` on a server is not honoured."""
    allow_config_override: bool = True
    """``false``: ``nbagent mcp-server --allow-config-override`` is refused."""
    allow_serve: bool = True
    """``false``: ``%agent serve`` is refused."""
    audit_dir: str | None = None
    """Where audit logs go, a folder per user (``audit_dir/USER/``); ``audit/`` under each user's home when unset."""
    limits: Limits = Field(default_factory=Limits)

    _files: dict[str, str] = PrivateAttr(default_factory=dict)
    """Key -> the file that set it."""

    def source(self, key: str) -> str:
        return self._files.get(key, "requirements")

    # -- checks ---------------------------------------------------------------------------

    def _allowed(self, key: str) -> list[Any] | None:
        value = getattr(self, key)
        return list(value) if value is not None else None

    def refusal(self, key: str, what: str, value: Any) -> str | None:
        """Why ``what = value`` is ruled out by ``key``, or ``None``."""
        allowed = self._allowed(key)
        if allowed is None or value in allowed:
            return None
        return (f"{what} = {value!r} is not allowed by requirements: {key} in {self.source(key)} "
                f"allows {', '.join(map(repr, allowed))}")

    def check(self, key: str, what: str, value: Any) -> None:
        """Refuse a value someone chose for this run."""
        if value is not None and (why := self.refusal(key, what, value)):
            raise RequirementError(why)

    def check_turn(self, *, policy: str | None = None, model: str | None = None) -> None:
        """Refuse a turn's (or a call's) own policy or model that the requirements rule out."""
        self.check("allowed_approval_policies", "approval_policy", policy)
        self.check("allowed_models", "model", model)

    def check_switch(self, key: str, what: str) -> None:
        """Refuse what ``key = false`` forbids."""
        if not getattr(self, key):
            raise RequirementError(f"{what} is not allowed by requirements: {key} = false in {self.source(key)}")

    def fallback(self, key: str, what: str, value: Any) -> tuple[Any, str | None]:
        """``value`` when allowed, else the first allowed value and a warning saying so."""
        why = self.refusal(key, what, value)
        if why is None:
            return value, None
        first = self._allowed(key)[0]  # type: ignore[index]  # refused means a list is set
        return first, f"{why}: using {first!r}"

    def check_provider(self, name: str, base_url: str | None) -> str | None:
        """Why provider ``name`` at ``base_url`` is ruled out, or ``None``."""
        if self.model_providers is None:
            return None
        where = self.source("model_providers")
        pinned = self.model_providers.get(name)
        if pinned is None:
            return (f"model_provider = {name!r} is not allowed by requirements: model_providers in {where} "
                    f"allows {', '.join(map(repr, self.model_providers))}")
        if (base_url or None) != pinned.base_url:
            want = pinned.base_url or "the provider's own endpoint"
            return (f"model_providers.{name}.base_url = {base_url!r} is not allowed by requirements: "
                    f"{where} pins it to {want}")
        return None

    def server_refusal(self, name: str, cfg: McpServerConfig) -> str | None:
        """``disabled by requirements (FILE)`` when the allowlist does not admit ``name`` as configured."""
        if self.mcp_servers is None:
            return None
        entry = self.mcp_servers.get(name)
        if entry is not None and entry.identity.matches(cfg):
            return None
        return f"disabled by requirements ({self.source('mcp_servers')})"

    def admit(self, name: str, cfg: McpServerConfig) -> tuple[McpServerConfig, list[str]]:
        """``cfg`` as the requirements let it run (disabled, untrusted or in an allowed sandbox)
        and a warning for each change; ``cfg`` itself when nothing changes."""
        update: dict[str, Any] = {}
        notes: list[str] = []
        disabled = self.server_refusal(name, cfg)
        if disabled and (cfg.enabled or cfg.disabled_by is None):
            update["enabled"] = False
            entry = (self.mcp_servers or {}).get(name)
            why = f"its identity is not {entry.identity.describe()}" if entry else "its name is not in the allowlist"
            notes.append(f"MCP server {name!r} {disabled}: {why}")
        if cfg.trusted and not self.allow_trusted_servers:
            update["trusted"] = False
            notes.append(f"MCP server {name!r}: trusted = true is not allowed by requirements: "
                         f"allow_trusted_servers = false in {self.source('allow_trusted_servers')}: not honoured")
        if cfg.sandbox_mode is not None:
            mode, note = self.fallback("allowed_sandbox_modes", f"mcp_servers.{name}.sandbox_mode", cfg.sandbox_mode)
            if note:
                update["sandbox_mode"] = mode
                notes.append(note)
        if not update:
            return cfg, []
        admitted = cfg.model_copy(update=update)
        if disabled:
            admitted._disabled_by = disabled
        return admitted, notes


def url_within(url: str, allowed: str) -> bool:
    """``url`` is ``allowed`` or under it: same scheme, host and port, no user part, and its path
    at or below ``allowed``'s by whole segments (``http://good.example.evil`` is not under
    ``http://good.example``, nor ``/mcp-evil`` under ``/mcp``)."""
    try:
        got, want = urlsplit(url), urlsplit(allowed)
        ports = got.port, want.port
    except ValueError:
        return False
    default = {"http": 80, "https": 443}
    if got.scheme.lower() != want.scheme.lower() or got.username is not None or got.password is not None:
        return False
    if (got.hostname or "") != (want.hostname or "") or not got.hostname:
        return False
    if (ports[0] or default.get(got.scheme.lower())) != (ports[1] or default.get(want.scheme.lower())):
        return False
    if any(unquote(part) in (".", "..") for part in got.path.split("/")):
        return False  # /mcp/../admin is /admin once a client or server resolves it
    base = want.path.rstrip("/")
    return got.path.rstrip("/") == base or got.path.startswith(base + "/")


# -- where they are read from --------------------------------------------------------------


def admin_owned(path: Path, uid: int | None = None, gids: Sequence[int] | None = None) -> str | None:
    """Why ``path`` is not an administrator's file for user ``uid`` (the running one), or ``None``:
    the user owns it or can write it, or owns or can write a folder above it (and so replace it;
    a sticky folder such as /tmp protects what others own). Root is the administrator."""
    uid = os.getuid() if uid is None else uid
    if uid == 0:
        return None
    groups = set(os.getgroups() if gids is None else gids)
    real = path.resolve()
    chain = [real, *real.parents]
    for i, here in enumerate(chain):
        st = here.stat()
        writable = (st.st_uid == uid or (st.st_gid in groups and st.st_mode & stat.S_IWGRP)
                    or st.st_mode & stat.S_IWOTH)
        if not writable:
            continue
        if i and st.st_mode & stat.S_ISVTX and st.st_uid != uid and chain[i - 1].stat().st_uid != uid:
            continue  # a sticky folder: only an entry's owner may replace it
        mode = stat.filemode(st.st_mode)
        return f"{here} can be changed by the user running nbagent (uid {uid}; owner uid {st.st_uid}, {mode})"
    return None


def _read(name: str, notes: list[str]) -> list[tuple[Path, dict[str, Any]]]:
    found: list[tuple[Path, dict[str, Any]]] = []
    for folder in SEARCH_PATH:
        path = folder / name
        if not present(path):
            continue
        if why := admin_owned(path):
            notes.append(f"{path}: not read: {why}; requirements and managed defaults are read only from files "
                         f"only an administrator can change")
            continue
        found.append((path, read_toml(path)))
    return found


def load_requirements(notes: list[str] | None = None) -> Requirements:
    """Every ``requirements.toml`` on ``SEARCH_PATH``, the first to set a key winning; warnings
    (a file not read) go to ``notes``."""
    notes = [] if notes is None else notes
    merged: dict[str, Any] = {}
    files: dict[str, str] = {}
    for path, data in _read(REQUIREMENTS_FILE, notes):
        try:
            Requirements.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"{path}: {problems(exc)}") from None
        for key, value in data.items():
            if key not in merged:
                merged[key], files[key] = value, str(path)
    requirements = Requirements.model_validate(merged)
    requirements._files = files
    return requirements


def load_managed(notes: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """The ``managed_config.toml`` layers, weakest first (so the strongest merges last)."""
    return [(str(path), data) for path, data in reversed(_read(MANAGED_FILE, notes))]


def audit_folder(requirements: Requirements, home: Path, user: str) -> Path:
    """Where ``user``'s audit log goes: ``audit_dir/USER`` or ``home/audit``."""
    if requirements.audit_dir:
        return Path(requirements.audit_dir).expanduser() / user
    return home / "audit"


# -- holding a config to them ----------------------------------------------------------------


def check_chosen(requirements: Requirements, chosen: dict[str, Any]) -> None:
    """Refuse what someone chose for this run (command-line flags, a caller's or a session's
    overrides) that a requirement rules out."""
    requirements.check("allowed_approval_policies", "approval_policy", chosen.get("approval_policy"))
    requirements.check("allowed_sandbox_modes", "sandbox_mode", chosen.get("sandbox_mode"))
    requirements.check("allowed_models", "model", chosen.get("model"))
    provider = chosen.get("model_provider")
    if isinstance(provider, str) and requirements.model_providers is not None and provider not in requirements.model_providers:
        raise RequirementError(requirements.check_provider(provider, None) or "")
    providers = chosen.get("model_providers")
    for name, table in (providers.items() if isinstance(providers, dict) else ()):
        if isinstance(table, dict) and "base_url" in table and (why := requirements.check_provider(name, table["base_url"])):
            raise RequirementError(why)
    if chosen.get("projects"):
        requirements.check_switch("allow_trusting_folders", "trusting a folder")
