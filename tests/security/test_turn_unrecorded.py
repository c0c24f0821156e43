"""A turn that cannot record itself, for a reason no handler foresaw, still ends: its caller
gets a failed result naming the reason, the failure is shown once, and the session takes the
next turn, instead of its turn runner dying and every ``run`` after waiting forever.

The cause here is real: a variable named like a secret (``*_TOKEN``) holding bytes that are not
UTF-8, which the rollout's redaction cannot take in, so no line of a new thread's first turn
(its start, nor its failure) can be written while it is set; unset, the next turn is recorded.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.protocol import Event
from nbagent.store.rollout import read_rollout
from tests.core.conftest import home  # noqa: F401 - fixture
from tests.security.untrusted_fixtures import replay

SECRET = b"NBAGENT_TEST_NOT_UTF8_TOKEN"


@pytest.mark.timeout(60)
async def test_a_turn_that_cannot_be_recorded_fails_once_and_the_next_turn_runs(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture  # noqa: F811
) -> None:
    events: list[Event] = []
    async with Session(model=replay(tmp_path / "script.json", {"text": "answered"})) as session:
        session.subscribe(events.append)
        monkeypatch.setitem(os.environb, SECRET, b"tok\xffen-0123456789")
        with caplog.at_level(logging.DEBUG, logger="nbagent"):
            failed = await asyncio.wait_for(session.run("go"), 20)
        monkeypatch.delitem(os.environb, SECRET)
        again = await asyncio.wait_for(session.run("again"), 20)

    assert (failed.status, failed.error_code) == ("failed", "internal"), failed
    assert (failed.error or "").startswith("the turn stopped: internal error: UnicodeEncodeError"), failed.error
    shown = [e.msg for e in events if e.turn_id == failed.turn_id and e.msg.type == "turn_failed"]
    assert [m.message for m in shown] == [failed.error]  # type: ignore[union-attr]
    logged = [r for r in caplog.records if r.name == "nbagent.core.session"]
    assert len(logged) == 1 and logged[0].exc_info and logged[0].exc_info[0] is UnicodeEncodeError, logged

    assert (again.status, again.text) == ("completed", "answered"), again
    lines, warnings = read_rollout(home / "threads" / f"{again.thread_id}.jsonl")
    assert warnings == []
    prompts = [line.item.text for line in lines if line.type == "item" and line.item.type == "user_message"]
    assert prompts == ["again"]  # the failed turn left no line, no empty rollout and no lock behind
