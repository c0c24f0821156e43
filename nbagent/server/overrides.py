"""What a caller of the ``agent`` tool may change: nothing that widens what the server runs.

A token holder is trusted with what the server's owner configured, not with the owner's account:
a caller-chosen ``mcp_servers`` command, ``cwd`` (whose ``nbagent.toml`` names commands),
``home``, provider URL or ``replay:`` file would run commands or read files as the user. So by
default a caller may set only the model name (sent to the configured provider; a ``replay:``
file only when it is the server's own), a policy at least as strict as the server's, extra
instructions and the thread's name. ``--allow-config-override`` lifts the rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nbagent.config import Config
from nbagent.models.replay import PREFIX as REPLAY
from nbagent.protocol import Policy

FLAG = "--allow-config-override"

STRICTER: dict[Policy, frozenset[Policy]] = {
    "full-auto": frozenset({"full-auto", "on-request", "untrusted", "never"}),
    "on-request": frozenset({"on-request", "untrusted", "never"}),
    "untrusted": frozenset({"untrusted"}),
    "never": frozenset({"never"}),
}
"""Server policy -> the policies a caller may choose instead: those that run no call the server's
would not run and ask wherever it asks. ``untrusted`` and ``never`` are not comparable:
``never`` runs an ``approval_mode = "approve"`` tool unasked, which ``untrusted`` asks about."""

CALLER_CONFIG_KEYS = frozenset({"model", "approval_policy", "instructions"})


@dataclass(frozen=True)
class Overrides:
    """What one ``agent`` call asks to change for its new thread."""

    model: str | None = None
    policy: Policy | None = None
    cwd: str | None = None
    config: dict[str, Any] | None = None


NO_OVERRIDES = Overrides()
"""A call that asks to change nothing."""


class OverrideRefused(ValueError):
    """A caller's override that could widen what runs; the message names the key."""


def at_least_as_strict(asked: Policy, server: Policy) -> bool:
    return asked in STRICTER[server]


def _path(key: str, value: Any) -> str:
    """``mcp_servers`` + ``{"x": {"command": ...}}`` -> ``mcp_servers.x.command``: the key that bites."""
    while isinstance(value, dict) and len(value) == 1:
        (sub, value), = value.items()
        key = f"{key}.{sub}"
    return key


def _refuse(what: str, why: str) -> OverrideRefused:
    return OverrideRefused(f"{what} cannot be set by a caller of this server: {why} "
                           f"(the server's owner can allow it with {FLAG})")


def _replay_file(model: str, cwd: Path) -> Path:
    path = Path(model[len(REPLAY):].strip()).expanduser()
    return (path if path.is_absolute() else cwd / path).resolve()


def check_overrides(asked: Overrides, *, server: Config, server_cwd: Path) -> None:
    """Raise ``OverrideRefused`` for the first override that could widen what ``server`` runs."""
    config = asked.config or {}
    for key, value in config.items():
        if key not in CALLER_CONFIG_KEYS:
            raise _refuse(f"config key '{_path(key, value)}'", "it could change what runs or where")
    if asked.cwd is not None and Path(asked.cwd).expanduser().resolve() != server_cwd:
        raise _refuse("argument 'cwd'", "another folder's nbagent.toml and .mcp.json can name commands")
    for what, name in (("argument 'model'", asked.model), ("config key 'model'", config.get("model"))):
        if isinstance(name, str) and name.strip().startswith(REPLAY):
            own = server.model or ""
            if not own.startswith(REPLAY) or _replay_file(name, server_cwd) != _replay_file(own, server_cwd):
                raise _refuse(what, "a replay: model reads a file; only the server's own replay model is allowed")
    policies = (("argument 'policy'", asked.policy), ("config key 'approval_policy'", config.get("approval_policy")))
    for what, policy in policies:
        if isinstance(policy, str) and policy in STRICTER and not at_least_as_strict(policy, server.approval_policy):
            allowed = ", ".join(sorted(STRICTER[server.approval_policy]))
            raise _refuse(what, f"{policy!r} is looser than the server's {server.approval_policy!r} "
                                f"(allowed: {allowed})")
