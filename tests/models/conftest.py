"""Fixtures for the model client tests: fast backoff and a client of each wire API."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from nbagent.models import retry as retry_module
from nbagent.models.base import ModelClient
from nbagent.models.chat import ChatModel
from nbagent.models.endpoint import Endpoint
from nbagent.models.responses import ResponsesModel
from nbagent.models.retry import RetryPolicy
from tests.fakes.openai_server import FakeOpenAIServer
from tests.models.helpers import API_KEY, MODEL, MakeClient


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries in tests wait milliseconds, not seconds."""
    monkeypatch.setattr(retry_module, "BACKOFF_BASE_SEC", 0.001)
    monkeypatch.setattr(retry_module, "BACKOFF_MAX_SEC", 0.01)


@pytest.fixture(params=["responses", "chat"])
def wire(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
async def make_client(openai_server: FakeOpenAIServer, wire: str) -> AsyncIterator[MakeClient]:
    """Build a client of the parametrised wire API against the fake server; closed afterwards."""
    made: list[ModelClient] = []

    def make(*, retries: int = 3, base_url: str | None = None) -> ModelClient:
        endpoint = Endpoint(base_url=base_url or openai_server.base_url, api_key=API_KEY)
        cls = ResponsesModel if wire == "responses" else ChatModel
        client = cls(MODEL, endpoint, retry=RetryPolicy(max_retries=retries))
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()
