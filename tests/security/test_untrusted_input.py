"""What a person types is checked without running a server's regular expressions.

A real hostile MCP server puts a catastrophically backtracking ``pattern`` (``^(a+)+$``) in a
tool's inputSchema and in a question's requestedSchema; the user edits the arguments / answers
with ``"a" * 64 + "!"``. ``re`` holds the GIL, so a check that ran the pattern would freeze the
event loop for good. Each scenario runs in a child process with a ticker task on the loop: the
ticker must keep ticking after the answer, and the call must go on (a frozen child fails the
test on the hang guard instead of hanging it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security.untrusted_fixtures import run_child

CHILD = """
import asyncio, json
from pathlib import Path
from nbagent import Session
from nbagent.protocol import ApprovalDecision, ElicitationResponse
from tests.security.untrusted_fixtures import BACKTRACKS, call, hostile_text_server, replay

SCENARIO = {scenario!r}


def answer(session, event, seen):
    if event.msg.type == "approval_requested":
        edited = {{"q": BACKTRACKS}}
        if SCENARIO == "panel":
            from nbagent.notebook.approval import ApprovalPanel

            panel = ApprovalPanel(event.msg, session.submit)
            panel.arguments.value = json.dumps(edited)
            return panel.decide("approve")
        return session._approvals.answer(ApprovalDecision(call_id=event.msg.call_id, decision="approve", arguments=edited)) is None
    if event.msg.type == "elicitation_requested":
        if SCENARIO == "form":
            from nbagent.notebook.elicitation import ElicitationForm

            form = ElicitationForm(event.msg, session.submit)
            form.inputs["code"].value = BACKTRACKS
            return form.respond("accept")
        return session._elicitations.answer(
            ElicitationResponse(request_id=event.msg.request_id, action="accept", content={{"code": BACKTRACKS}})
        ) is None
    return None


async def main():
    work = Path.cwd()
    record = work / "record.jsonl"
    tool = "mcp__evil__backtrack" if SCENARIO in ("core", "panel") else "mcp__evil__ask_backtrack"
    arguments = {{"q": "a"}} if SCENARIO in ("core", "panel") else {{}}
    model = replay(work / "script.json", call(tool, **arguments), {{"text": "done"}})
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.005)

    seen = {{}}
    servers = {{"evil": hostile_text_server(record)}}
    async with Session(model=model, policy="untrusted", mcp_servers=servers, interactive=True) as session:
        tick = asyncio.ensure_future(ticker())

        def front_end(event):
            accepted = answer(session, event, seen)
            if accepted is not None:
                seen["before"], seen["accepted"] = ticks, accepted
            if accepted is False:  # refused: end the turn so the test reports it
                session._interrupt("the answer was refused")
            elif accepted is None and event.msg.type == "approval_requested":
                session.submit(ApprovalDecision(call_id=event.msg.call_id, decision="approve"))

        session.subscribe(front_end)
        result = await asyncio.wait_for(session.run("go"), 60)
        for _ in range(2000):  # the loop keeps running after the answer
            if ticks > seen["before"] + 5:
                break
            await asyncio.sleep(0.005)
        tick.cancel()
    records = [json.loads(line) for line in record.read_text().splitlines()] if record.exists() else []
    print(json.dumps({{"accepted": seen["accepted"], "ticked": ticks - seen["before"], "records": records,
                      "status": result.status}}))


asyncio.run(main())
"""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("scenario", ["core", "panel", "answer", "form"])
def test_a_backtracking_pattern_never_freezes_the_loop(tmp_path: Path, scenario: str) -> None:
    """core/panel: edited arguments through the session / the approval panel; answer/form: an
    elicitation answer through the session / the form widget."""
    out = run_child(CHILD.format(scenario=scenario), tmp_path)
    assert out["accepted"] is True  # patterns are not checked: the server checks its own
    assert out["ticked"] > 5
    assert out["status"] == "completed"
    sent = out["records"][-1]
    if scenario in ("core", "panel"):
        assert sent["arguments"] == {"q": "a" * 64 + "!"}  # what runs is what the user typed
    else:
        assert (sent["action"], sent["content"]) == ("accept", {"code": "a" * 64 + "!"})


def test_the_sanitised_schema_still_refuses_what_it_can_check() -> None:
    from nbagent.mcp.checks import argument_problems

    schema = {"type": "object", "properties": {"q": {"type": "string", "pattern": "^(a+)+$", "maxLength": 3}}}
    assert argument_problems(schema, {"q": 5}) == ['q: 5 is not of type "string"']
    assert argument_problems(schema, {"q": "aaaa"}) == ['q: "aaaa" is longer than 3 characters']
    assert argument_problems(schema, ["not", "an", "object"]) == ["arguments must be a JSON object"]


def test_a_check_that_overruns_its_bound_refuses() -> None:
    import threading

    from nbagent.mcp.checks import bounded

    release = threading.Event()
    try:
        problems = bounded(lambda: [] if release.wait(30) else [], "the arguments", seconds=0.05)
    finally:
        release.set()
    assert problems == ["the arguments could not be checked within 0.05 s; refused"]
