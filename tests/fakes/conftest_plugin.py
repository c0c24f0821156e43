"""Pytest plugin: the ``openai_server`` fixture (one real server per test session, reset per test).

Enable with ``pytest_plugins = ["tests.fakes.conftest_plugin"]`` in ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.openai_server import FakeOpenAIServer


@pytest.fixture(scope="session")
def _openai_server_session() -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer().start()
    yield server
    server.stop()


@pytest.fixture
def openai_server(_openai_server_session: FakeOpenAIServer) -> Iterator[FakeOpenAIServer]:
    """A running fake OpenAI server with an empty script and no recorded requests."""
    _openai_server_session.reset()
    yield _openai_server_session
    _openai_server_session.reset()
