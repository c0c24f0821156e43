"""The environment a stdio MCP server starts with (DESIGN §13).

Cleared, not inherited: the model's API key and the user's other secrets must never reach a
server that was not explicitly given them. Values are never logged; only names are.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from nbagent.config import McpServerConfig

ALLOWED_VARS: tuple[str, ...] = ("HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ")
"""Passed through when present: what ordinary programs need to find tools, files and locale."""


def server_env(cfg: McpServerConfig, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The full environment for one server: allowlist, then ``env_vars``, then the ``env`` table.

    ``env`` wins over ``env_vars`` because it is the more explicit statement in the config.
    Variables named in ``env_vars`` but unset are simply absent (see :func:`missing_env_vars`).
    """
    source = os.environ if environ is None else environ
    env = {name: source[name] for name in ALLOWED_VARS if name in source}
    env.update({name: source[name] for name in cfg.env_vars if name in source})
    env.update(cfg.env)
    return env


def missing_env_vars(cfg: McpServerConfig, environ: Mapping[str, str] | None = None) -> list[str]:
    """Names from ``env_vars`` that are not set, for a warning that names them (never values)."""
    source = os.environ if environ is None else environ
    return [name for name in cfg.env_vars if name not in source]
