"""make_model: replay, Responses or Chat by wire_api, and the key rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbagent.config import Config, ConfigError, ModelProviderConfig, load_config
from nbagent.models.base import ModelClient, ModelError
from nbagent.models.chat import ChatModel
from nbagent.models.factory import make_model
from nbagent.models.replay import ReplayModel
from nbagent.models.responses import ResponsesModel
from tests.fakes.openai_server import FakeOpenAIServer
from tests.models.helpers import collect, text_of


def test_replay_resolves_against_cwd(tmp_path: Path) -> None:
    (tmp_path / "script.json").write_text('{"responses": []}')
    model = make_model(Config(), "replay:script.json", cwd=tmp_path)
    assert isinstance(model, ReplayModel) and isinstance(model, ModelClient)
    assert model.path == tmp_path / "script.json" and model.scripted


def test_a_missing_replay_script_is_refused_when_the_model_is_made(tmp_path: Path) -> None:
    """Before a turn starts, not in it: a turn that cannot start leaves nothing behind."""
    with pytest.raises(ModelError, match=r"nowhere\.json does not exist"):
        make_model(Config(), "replay:nowhere.json", cwd=tmp_path)


def test_replay_needs_a_path() -> None:
    with pytest.raises(ConfigError, match="replay:PATH"):
        make_model(Config(), "replay:")


def test_openai_cloud_without_key_says_what_to_set() -> None:
    with pytest.raises(ConfigError) as info:
        make_model(Config(), "gpt-5.1")
    assert "OPENAI_API_KEY" in str(info.value) and "replay:FILE" in str(info.value)


def test_openai_with_key_is_responses() -> None:
    config = Config(api_key="sk-x")
    model = make_model(config, "gpt-5.1")
    assert isinstance(model, ResponsesModel) and not model.scripted
    assert model.label == "gpt-5.1 (OpenAI Responses)"
    assert "sk-x" not in repr(model.endpoint)


def test_local_chat_provider_needs_no_key() -> None:
    config = Config(
        model_provider="local",
        model_providers={"local": ModelProviderConfig(base_url="http://127.0.0.1:11434/v1/", wire_api="chat",
                                                      request_max_retries=1)},
    )
    model = make_model(config, "llama3.2")
    assert isinstance(model, ChatModel)
    assert model.endpoint.base_url == "http://127.0.0.1:11434/v1" and model.endpoint.api_key == "not-needed"
    assert model.retry.max_retries == 1
    assert "Chat Completions" in model.label


async def test_openai_base_url_from_environment(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    config = load_config(tmp_path, environ={"OPENAI_BASE_URL": openai_server.base_url, "OPENAI_API_KEY": "sk-env-key-123456",
                                            "NBAGENT_HOME": str(tmp_path / "home")})
    model = make_model(config, "fake-model")
    assert isinstance(model, ResponsesModel)
    openai_server.script([{"text": "from env"}])
    assert text_of(await collect(model)) == "from env"
    await model.aclose()
    assert openai_server.headers[0]["authorization"] == "Bearer sk-env-key-123456"
