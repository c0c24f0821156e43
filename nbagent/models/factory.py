"""Pick the model client for a model name: ``replay:PATH``, Responses, or Chat Completions."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from nbagent.config import OPENAI_BASE_URL, Config, ConfigError
from nbagent.models.base import ModelClient
from nbagent.models.replay import PREFIX, ReplayModel

if TYPE_CHECKING:
    from nbagent.models.endpoint import Endpoint
    from nbagent.models.retry import RetryPolicy

# The HTTP clients (``endpoint``, ``retry``, ``chat``, ``responses``) are imported when one is
# made: they pull in the ``openai`` SDK, a third of a second that ``nbagent --help``, ``mcp
# list``, ``threads`` or a replay run never need.


def endpoint_for(config: Config, model: str) -> Endpoint:
    """The server and key of the configured provider; no key is fine only for a custom base_url."""
    from nbagent.models.endpoint import NO_KEY, Endpoint

    provider = config.provider()
    name = config.model_provider
    key_hint = provider.env_key or ("OPENAI_API_KEY" if name == "openai" else f"[model_providers.{name}] env_key")
    base_url = (provider.base_url or OPENAI_BASE_URL).rstrip("/")
    api_key = config.api_key
    if not api_key:
        if base_url == OPENAI_BASE_URL:
            raise ConfigError(
                f"model {model!r} needs an API key for {OPENAI_BASE_URL}: set {key_hint}, or point at a local "
                "server with [model_providers.local] base_url = \"http://127.0.0.1:11434/v1\" and "
                "model_provider = \"local\", or use model = \"replay:FILE\" for a scripted model"
            )
        api_key = NO_KEY
    return Endpoint(
        base_url=base_url,
        api_key=api_key,
        key_hint=key_hint,
        provider=name,
        headers=dict(provider.http_headers),
        query=dict(provider.query_params),
        idle_timeout=provider.stream_idle_timeout_sec,
    )


def is_replay(model: str) -> bool:
    """Whether ``model`` names the scripted model (``replay:PATH``), which is never presented as AI."""
    return model.startswith(PREFIX)


def make_model(
    config: Config,
    model: str,
    *,
    cwd: str | Path | None = None,
    retry: RetryPolicy | None = None,
) -> ModelClient:
    """``replay:PATH`` (relative to ``cwd``) or the provider's ``wire_api`` client."""
    if is_replay(model):
        path = model[len(PREFIX) :].strip()
        if not path:
            raise ConfigError("model 'replay:' needs a file: use replay:PATH, e.g. replay:tests/fixtures/demo.json")
        replay = ReplayModel(path, cwd=cwd)
        replay.load()  # a missing or broken script is refused before a turn starts, not in it
        return replay
    from nbagent.models.chat import ChatModel
    from nbagent.models.responses import ResponsesModel
    from nbagent.models.retry import RetryPolicy

    provider = config.provider()
    endpoint = endpoint_for(config, model)
    policy = retry or RetryPolicy(max_retries=provider.request_max_retries)
    if provider.wire_api == "chat":
        return ChatModel(model, endpoint, retry=policy)
    return ResponsesModel(model, endpoint, retry=policy)
