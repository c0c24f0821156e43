"""What a session hands its subscribers is already redacted as its rollout is: a script or a new
front end that reads ``Session.subscribe`` or ``Session.events()`` sees no secret the model
repeated, not even one it streamed in pieces, without redacting anything itself."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.protocol import Event
from tests.core.conftest import home  # noqa: F401 - fixture
from tests.core.test_openai_session import config_for
from tests.fakes.openai_server import FakeOpenAIServer
from tests.security.test_secrets_split_stream import API_KEY, MESSAGE, OTHER, SECRETS, SHOWN, split

pytestmark = pytest.mark.timeout(60)


async def test_subscribers_and_event_iterators_get_events_redacted(
    openai_server: FakeOpenAIServer, home: Path, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    monkeypatch.setenv("SPLIT_TOKEN", OTHER)
    openai_server.script([split(MESSAGE)])
    config = config_for(openai_server, "chat", home)
    config.api_key = API_KEY
    subscribed: list[Event] = []
    iterated: list[Event] = []
    async with Session(config=config) as session:
        session.subscribe(subscribed.append)
        events = session.events()

        async def read() -> None:
            async for event in events:
                iterated.append(event)

        reading = asyncio.create_task(read())
        result = await asyncio.wait_for(session.run("hi"), 30)
    await asyncio.wait_for(reading, 10)
    assert result.ok, result
    for seen in (subscribed, iterated):
        text = "".join(e.msg.delta for e in seen if e.msg.type == "agent_message_delta")  # type: ignore[union-attr]
        assert text == SHOWN
        dumped = "".join(e.model_dump_json() for e in seen)
        assert not [s for s in SECRETS if s in dumped], dumped
