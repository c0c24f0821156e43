"""``inspect request --all``: every model request of the last turn, in order, each as the model
client was given it; a turn that makes more than ``REQUESTS_KEPT`` keeps its last ones and says
how many it dropped, live and in what it writes beside the rollout for ``nbagent inspect``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.config import Config
from nbagent.core.inspect import REQUESTS_KEPT, RequestRecord, RequestsRecord, RequestsView
from nbagent.protocol import Inspect, InspectResult
from tests.core.conftest import home, script  # noqa: F401 - fixtures


async def _every(session: Session) -> RequestsView:
    answer = await session.perform(Inspect(view="request", all=True))
    assert isinstance(answer, InspectResult)
    return RequestsView.model_validate(answer.data)


async def test_a_long_turn_keeps_its_last_requests_and_counts_the_rest(home: Path, script: Callable[..., str]) -> None:  # noqa: F811
    rounds = REQUESTS_KEPT + 2  # each round calls a tool that does not exist, so the model is asked again
    calls = [{"tool_calls": [{"name": "nosuch", "arguments": {"round": n}}]} for n in range(1, rounds)]
    model = script(*calls, {"text": "gave up"}, {"text": "short"})
    async with Session(config=Config(home=str(home), model=model), thread_name="long") as session:
        assert (await asyncio.wait_for(session.run("keep trying"), 60)).status == "completed"
        every = await _every(session)
        assert every.dropped == 2 and len(every.requests) == REQUESTS_KEPT
        assert {r.turn_id for r in every.requests} == {every.turn_id}
        # in order: request n carries the calls of rounds 1..n-1, so the first kept (n = 3) two of them
        counts = [sum(i["type"] == "function_call" for i in r.items) for r in every.requests]
        assert counts == list(range(2, rounds))
        assert every.requests[-1] == session._inspector.last_request(session._thread.id)

        written = json.loads((home / "threads" / f"{session._thread.id}.request.json").read_text())
        assert written["dropped"] == 2 and len(written["requests"]) == REQUESTS_KEPT
        assert [r["item_count"] for r in written["requests"]] == [len(r.items) for r in every.requests]

        assert (await asyncio.wait_for(session.run("once"), 60)).status == "completed"
        again = await _every(session)
        assert again.dropped == 0 and len(again.requests) == 1 and again.turn_id != every.turn_id


def test_a_request_file_an_older_version_wrote_still_reads_as_its_turn_s_one_request() -> None:
    one = RequestRecord(turn_id="turn_1", at=0.0, model="m", purpose="turn", instructions="hi", tools=[],
                        parallel_tool_calls=False, item_count=2)  # fmt: skip
    record = RequestsRecord.read(one.model_dump_json())
    assert (record.turn_id, record.dropped, record.requests) == ("turn_1", 0, [one])
    with pytest.raises(ValueError):
        RequestsRecord.read('{"turn_id": "turn_1"}')  # neither: the command names the file and says so


def test_what_a_request_shares_with_the_one_before_is_written_once_and_read_back_whole() -> None:
    """A long turn's requests mostly carry the same instructions and tools (hundreds of kB for a
    big catalogue): the file holds them once, and ``read`` gives every request its own again."""
    tools = [{"name": "big", "description": "schema " * 1000, "parameters": {}, "strict": False}]
    first = RequestRecord(turn_id="t", at=0.0, model="m", purpose="turn", instructions="rules", tools=tools,
                          parallel_tool_calls=True, item_count=1)  # fmt: skip
    same = first.model_copy(update={"item_count": 3})
    other = first.model_copy(update={"item_count": 5, "instructions": "rules, then more"})
    record = RequestsRecord(turn_id="t", dropped=0, requests=[first, same, other])
    text = record.compact().model_dump_json()
    assert text.count('"name":"big"') == 1 and text.count("rules") == 2
    assert RequestsRecord.read(text) == record
