"""Codex's sandbox settings (``sandbox_mode``, ``[sandbox_workspace_write]``) and the policy one
process runs under, resolved to concrete paths.

The config keys carry Codex's names and meanings; :func:`resolve` turns them, with the
workspace, nbagent's home and the deny-read list, into a :class:`SandboxPolicy`: which folders
may be written, which stay read-only inside them (``.git``), which are hidden, whether the
network is there. :meth:`SandboxPolicy.plan` is what the launcher enforces
(:mod:`nbagent.sandbox.enforce`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SandboxMode = Literal["read-only", "workspace-write", "danger-full-access"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("read-only", "workspace-write", "danger-full-access")
DEFAULT_MODE: SandboxMode = "workspace-write"
OPT_OUT = 'sandbox_mode = "danger-full-access"'
"""The one key that runs a process without the sandbox, as every refusal names it."""

DENY_READ: tuple[str, ...] = (
    "~/.ssh", "~/.gnupg", "~/.aws", "~/.config/gcloud", "~/.azure", "~/.kube",
    "~/.docker/config.json", "~/.netrc",
)  # fmt: skip
"""Secrets no sandboxed process may read, beyond nbagent's home and Jupyter's runtime folder."""
PROTECTED_SUBFOLDERS: tuple[str, ...] = (".git",)
"""Kept read-only inside every writable root, as Codex does."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class SandboxWorkspaceWrite(_Strict):
    """``[sandbox_workspace_write]``: what ``workspace-write`` adds to the workspace (Codex's keys)."""

    writable_roots: list[str] = Field(default_factory=list)
    """More folders the process may write (``~`` expanded; relative to the workspace)."""
    network_access: bool = False
    """Let the process reach the network (otherwise it has its own empty network namespace)."""
    exclude_tmpdir_env_var: bool = False
    """Codex's key, read for compatibility: every sandboxed process gets a private ``TMPDIR``."""
    exclude_slash_tmp: bool = False
    """Codex's key, read for compatibility: the shared ``/tmp`` is never writable."""


class SandboxSettings(_Strict):
    """``[sandbox]``: nbagent's additions to Codex's sandbox keys."""

    deny_read: list[str] = Field(default_factory=list)
    """More files and folders no sandboxed process may read (``~`` expanded), beyond :data:`DENY_READ`."""


class SandboxPolicy(BaseModel):
    """What one process may do, in concrete absolute paths."""

    model_config = ConfigDict(frozen=True)

    sandbox_mode: SandboxMode
    workspace: str
    """The folder a ``workspace-write`` process may write: the session's (the notebook's) folder."""
    writable_roots: tuple[str, ...] = ()
    """Every folder it may write (the workspace first under ``workspace-write``); a private
    ``TMPDIR`` is added by the launcher."""
    read_only: tuple[str, ...] = ()
    """Folders inside writable roots kept read-only (``.git``)."""
    deny_read: tuple[str, ...] = ()
    """Files and folders hidden from it."""
    network_access: bool = False
    env: dict[str, str] = Field(default_factory=dict)
    """Variables the process needs under this policy (a package runner's cache), unless set."""
    caches: tuple[str, ...] = ()
    """Writable roots made when the process starts (a package runner's cache)."""

    @property
    def sandboxed(self) -> bool:
        return self.sandbox_mode != "danger-full-access"

    def plan(self) -> dict[str, Any] | None:
        """What the launcher enforces (JSON-able); ``None``: no sandbox."""
        if not self.sandboxed:
            return None
        expose = [root for root in self.writable_roots if any(_under(root, d) for d in self.deny_read)]
        return {
            "write": list(self.writable_roots),
            "readonly": list(self.read_only),
            "deny": list(self.deny_read),
            "expose": expose,
            "network": self.network_access,
        }

    def describe(self) -> str:
        """One line for status displays: the mode, and under ``workspace-write`` the network."""
        if self.sandbox_mode == "workspace-write":
            return f"workspace-write, network {'on' if self.network_access else 'off'}"
        return self.sandbox_mode

    def codex_policy(self) -> dict[str, Any]:
        """The policy as Codex serialises its ``SandboxPolicy`` (``codex/sandbox-state-meta``)."""
        if self.sandbox_mode != "workspace-write":
            return {"type": self.sandbox_mode}
        return {
            "type": "workspace-write",
            "writable_roots": [r for r in self.writable_roots if r != self.workspace],
            "network_access": self.network_access,
            "exclude_tmpdir_env_var": False,
            "exclude_slash_tmp": True,
        }


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _absolute(path: str, base: Path) -> str:
    return os.path.realpath(base / Path(path).expanduser())


def jupyter_runtime_dir() -> str | None:
    """Where Jupyter keeps kernel connection files (each one is code execution in a kernel)."""
    try:
        from jupyter_core.paths import jupyter_runtime_dir as runtime
    except ImportError:
        return None
    return runtime()


def resolve(
    mode: SandboxMode,
    workspace_write: SandboxWorkspaceWrite,
    *,
    workspace: str | Path,
    home: str | Path,
    deny_read: list[str] | tuple[str, ...] = (),
    caches: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    network: bool | None = None,
) -> SandboxPolicy:
    """The policy of one process: ``mode`` and ``[sandbox_workspace_write]`` made concrete.

    ``home`` is nbagent's home (threads, tokens: hidden); ``caches`` are folders the process may
    write whatever the mode (a package runner's cache); ``network`` overrides ``network_access``
    (a package runner's first start).
    """
    base = Path(workspace).expanduser().resolve()
    writable: list[str] = []
    if mode == "workspace-write":
        writable = [str(base), *(_absolute(root, base) for root in workspace_write.writable_roots)]
    writable += [_absolute(cache, base) for cache in caches]
    writable = list(dict.fromkeys(writable))
    read_only = [
        os.path.join(root, sub) for root in writable for sub in PROTECTED_SUBFOLDERS
        if os.path.exists(os.path.join(root, sub))
    ]  # fmt: skip
    hidden = [*DENY_READ, str(home), *deny_read]
    if (runtime := jupyter_runtime_dir()) is not None:
        hidden.append(runtime)
    denied = list(dict.fromkeys(_absolute(path, base) for path in hidden))
    net = workspace_write.network_access if network is None else network
    return SandboxPolicy(
        sandbox_mode=mode, workspace=str(base), writable_roots=tuple(writable), read_only=tuple(read_only),
        deny_read=tuple(denied), network_access=mode == "danger-full-access" or net, env=env or {},
        caches=tuple(_absolute(cache, base) for cache in caches),
    )  # fmt: skip
