"""What a thread remembers of how it ran (model, provider, approval policy) and how a resumed
session takes it back: a thread started on a local server goes on there, under the policy it was
started with, not wherever the config of the folder it is resumed from points.

The rollout's first line names the provider and where its server was, never a key: the key is
read from the environment as the provider's config says, and the config, not the rollout, says
where requests go. A provider the config no longer defines is an error naming it, so a thread
meant for a local server is never sent to another one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from nbagent.config import OPENAI_BASE_URL, Config, ConfigError, provider_key
from nbagent.models.factory import is_replay
from nbagent.models.replay import PREFIX
from nbagent.protocol import ThreadMeta


def remembered(config: Config) -> dict[str, Any]:
    """The ``ThreadMeta`` fields saying how a new thread runs."""
    model = config.model or ""
    fields: dict[str, Any] = {"model": model, "approval_policy": config.approval_policy}
    if model and not is_replay(model):
        fields["model_provider"] = config.model_provider
        try:
            fields["base_url"] = _without_credentials(config.provider().base_url or OPENAI_BASE_URL)
        except ConfigError:
            pass  # the turn says so; the thread still names its provider
    return fields


def adopt(config: Config, meta: ThreadMeta, *, model_given: bool, policy_given: bool) -> list[str]:
    """Set ``config`` (in place) to run as ``meta`` says the thread ran, except for what the
    caller named itself (a model given brings the config's provider with it); returns warnings.
    Raises ``ConfigError`` when the thread's provider is defined nowhere now."""
    if meta.approval_policy is not None and not policy_given:
        config.approval_policy = meta.approval_policy
    if model_given or not meta.model:
        return []
    config.model = _replay_from(meta.model, meta.cwd)
    name = meta.model_provider
    if name is None or is_replay(meta.model):
        return []
    if name != "openai" and name not in config.model_providers:
        where = f" ({meta.base_url})" if meta.base_url else ""
        raise ConfigError(
            f"thread {meta.thread_id} ran model {meta.model!r} on model_provider {name!r}{where}, which no config "
            f"file here defines: add [model_providers.{name}] with its base_url, or resume with another model (-m MODEL)"
        )
    config.model_provider = name
    config.api_key = provider_key(config)
    now = _without_credentials(config.provider().base_url or OPENAI_BASE_URL)
    if meta.base_url and now != meta.base_url:
        return [f"thread {meta.thread_id} ran on {meta.base_url}; model_provider {name!r} now says {now}: using it"]
    return []


def _replay_from(model: str, cwd: str) -> str:
    """A scripted model's relative path as the thread's folder read it."""
    if not is_replay(model) or not cwd:
        return model
    path = Path(model[len(PREFIX):].strip()).expanduser()
    return model if path.is_absolute() else f"{PREFIX}{Path(cwd) / path}"


def _without_credentials(url: str) -> str:
    """``url`` without a user, a password, a query or a fragment: where, not how to get in."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    try:
        port = parts.port
    except ValueError:  # not a port: the turn says so
        port = None
    if port is not None:
        netloc += f":{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", "")).rstrip("/")
