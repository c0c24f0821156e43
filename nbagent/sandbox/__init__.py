"""The OS sandbox every stdio MCP server (and any command nbagent starts) runs in (DESIGN §18).

Codex's modes: ``read-only``, ``workspace-write`` (the default) and ``danger-full-access``.
:func:`resolve` makes a mode concrete (:class:`SandboxPolicy`), :func:`require` refuses to
start anything when this system cannot enforce it (never a silent downgrade), and
:func:`command` wraps any argv so that it runs under a policy, through the launcher
(:mod:`nbagent.mcp.launcher`, which enforces :mod:`nbagent.sandbox.enforce`).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from typing import Any

from nbagent.sandbox.policy import (
    DEFAULT_MODE,
    OPT_OUT,
    SANDBOX_MODES,
    SandboxMode,
    SandboxPolicy,
    SandboxSettings,
    SandboxWorkspaceWrite,
    resolve,
)

__all__ = [
    "DEFAULT_MODE",
    "LAUNCHER",
    "OPT_OUT",
    "SANDBOX_MODES",
    "SandboxMode",
    "SandboxPolicy",
    "SandboxSettings",
    "SandboxUnavailable",
    "SandboxWorkspaceWrite",
    "available",
    "command",
    "prepare",
    "require",
    "resolve",
]

_HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.path.join(os.path.dirname(_HERE), "mcp", "launcher.py")
"""The process every wrapped command starts under (stdlib only, ``python -I -S``)."""
_ENFORCE = os.path.join(_HERE, "enforce.py")


class SandboxUnavailable(RuntimeError):
    """This system cannot enforce the sandbox a process must run in: it is not started."""


@functools.cache
def available() -> tuple[str, ...]:
    """What this system lacks for the sandbox, one phrase each; empty when it has everything.

    Checked once per process in a child (a process with threads must not fork to try
    namespaces itself): a user namespace it cannot create, a kernel without Landlock.
    """
    if not sys.platform.startswith("linux"):
        return ("Linux (the sandbox uses Landlock and Linux namespaces; other systems have none yet)",)
    probe = subprocess.run(
        [sys.executable, "-I", "-S", _ENFORCE, "probe"], capture_output=True, text=True, timeout=30, check=False
    )
    lacks = tuple(line for line in probe.stdout.splitlines() if line.strip())
    if probe.returncode and not lacks:
        return (f"a working sandbox probe ({probe.stderr.strip()[-200:] or f'exit code {probe.returncode}'})",)
    return lacks


def require(policy: SandboxPolicy, who: str) -> None:
    """Raise :class:`SandboxUnavailable` naming what is missing and the key that opts out,
    when ``policy`` needs a sandbox this system cannot give; ``who`` names the process."""
    if not policy.sandboxed:
        return
    lacks = available()
    if lacks:
        raise SandboxUnavailable(
            f"{who} was not started: its sandbox ({policy.sandbox_mode}) needs {' and '.join(lacks)}, "
            f"which this system does not provide. To run it without a sandbox, set {OPT_OUT}"
        )


def prepare(policy: SandboxPolicy, env: dict[str, str]) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """What the launcher enforces for ``policy`` (``None``: no sandbox), and ``env`` with what
    the policy needs added; the policy's caches made. Call :func:`require` first."""
    for cache in policy.caches:
        os.makedirs(cache, exist_ok=True)
    return policy.plan(), {**policy.env, **env}


def command(policy: SandboxPolicy, argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """``argv`` wrapped to run under ``policy`` (through the launcher, which stays its parent
    and sweeps up what it leaves), and ``env`` with what the policy needs added. Call
    :func:`require` first: this only builds the command line."""
    plan, merged = prepare(policy, env)
    wrap = [sys.executable, "-I", "-S", LAUNCHER, str(os.getpid())]
    if plan is not None:
        wrap += ["--sandbox", json.dumps(plan)]
    return [*wrap, *argv], merged
