"""client -> nbagent mcp-server -> inner session -> recorder MCP server whose tool needs approval.

The approval must reach the outer client as an elicitation; the recorder's own log proves
whether the tool ran (accept: exactly once; decline: never).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from nbagent.store import ThreadStore
from tests.server.conftest import MODES, Seen, ServerEnv, connect

TRANSPORTS = ["stdio", "http"]


def _args(senv: ServerEnv, policy: str = "on-request") -> dict[str, Any]:
    model = senv.script(
        {"tool_calls": [{"name": "mcp__rec__write_note", "arguments": {"text": "hello"}}]},
        {"text": "Finished."},
    )
    return {"prompt": "write a note", "model": model, "policy": policy, "config": senv.recorder_config()}


def _decide(decision: str, reason: str | None = None):
    def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        schema = params.requested_schema
        assert schema["required"] == ["decision"]
        assert {o["const"] for o in schema["properties"]["decision"]["oneOf"]} >= {"approve", "deny"}
        content: dict[str, Any] = {"decision": decision}
        if reason:
            content["reason"] = reason
        return types.ElicitResult(action="accept", content=content)

    return answer


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_approval_accept_runs_once(transport: str, mode: str, senv: ServerEnv,
                                         request: pytest.FixtureRequest) -> None:
    http = request.getfixturevalue("http_server") if transport == "http" else None
    seen = Seen()
    async with connect(transport, mode, senv, http=http, seen=seen, answer=_decide("approve")) as client:
        result = await client.call_tool("agent", _args(senv))
    assert result.structured_content["text"] == "Finished.", result
    assert len(seen.elicitations) == 1
    message = seen.elicitations[0].message
    assert "write_note" in message and "rec" in message and '"hello"' in message
    assert senv.records() == [{"tool": "write_note", "arguments": {"text": "hello"}}]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_approval_deny_does_not_run(transport: str, mode: str, senv: ServerEnv,
                                          request: pytest.FixtureRequest) -> None:
    http = request.getfixturevalue("http_server") if transport == "http" else None
    seen = Seen()
    async with connect(transport, mode, senv, http=http, seen=seen, answer=_decide("deny", "not today")) as client:
        result = await client.call_tool("agent", _args(senv))
    assert result.structured_content["text"] == "Finished."
    assert len(seen.elicitations) == 1
    assert senv.records() == []


@pytest.mark.parametrize("mode", MODES)
async def test_decline_action_does_not_run(mode: str, senv: ServerEnv) -> None:
    def decline(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with connect("stdio", mode, senv, answer=decline) as client:
        result = await client.call_tool("agent", _args(senv))
    assert not result.is_error
    assert senv.records() == []


@pytest.mark.parametrize("mode", MODES)
async def test_client_without_elicitation_falls_back_to_policy(mode: str, senv: ServerEnv) -> None:
    seen = Seen()
    async with connect("stdio", mode, senv, seen=seen) as client:  # no elicitation callback
        result = await client.call_tool("agent", _args(senv))
    assert result.structured_content["text"] == "Finished."
    assert seen.elicitations == [] and senv.records() == []


@pytest.mark.parametrize("mode", MODES)
async def test_never_policy_declines_without_asking(mode: str, senv: ServerEnv) -> None:
    seen = Seen()
    async with connect("stdio", mode, senv, seen=seen, answer=_decide("approve")) as client:
        await client.call_tool("agent", _args(senv, policy="never"))
    assert seen.elicitations == [] and senv.records() == []


@pytest.mark.parametrize("mode", MODES)
async def test_reply_approval_in_second_turn(mode: str, senv: ServerEnv) -> None:
    """agent-reply on a live thread: its approvals are forwarded too."""
    model = senv.script(
        {"text": "Ready."},
        {"tool_calls": [{"name": "mcp__rec__write_note", "arguments": {"text": "two"}}]},
        {"text": "Wrote it."},
    )
    seen = Seen()
    args = {"prompt": "wait", "model": model, "config": senv.recorder_config()}
    async with connect("stdio", mode, senv, seen=seen, answer=_decide("approve")) as client:
        first = await client.call_tool("agent", args)
        second = await client.call_tool("agent-reply", {"thread_id": first.structured_content["thread_id"],
                                                        "prompt": "now write"})
    assert second.structured_content["text"] == "Wrote it."
    assert senv.records() == [{"tool": "write_note", "arguments": {"text": "two"}}]


@pytest.mark.parametrize("mode", MODES)
async def test_inner_elicitation_forwarded_with_its_schema(mode: str, senv: ServerEnv) -> None:
    model = senv.script({"tool_calls": [{"name": "mcp__rec__ask_name", "arguments": {}}]}, {"text": "Greeted."})
    config = senv.recorder_config()
    config["mcp_servers"]["rec"]["protocol"] = "legacy"
    config["mcp_servers"]["rec"]["trusted"] = True  # readOnlyHint then needs no approval

    def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        assert "What is your name?" in params.message
        assert params.requested_schema["properties"]["name"]["type"] == "string"
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    seen = Seen()
    async with connect("stdio", mode, senv, seen=seen, answer=answer) as client:
        result = await client.call_tool("agent", {"prompt": "greet", "model": model, "config": config})
    assert result.structured_content["text"] == "Greeted.", result
    assert len(seen.elicitations) == 1
    assert senv.records() == [{"tool": "ask_name", "arguments": {"action": "accept", "name": "Ada"}}]


@pytest.mark.parametrize("mode", MODES)
async def test_invalid_forwarded_answer_cancels_instead_of_hanging(mode: str, senv: ServerEnv) -> None:
    """An outer answer the inner schema refuses cannot be re-asked: the question is cancelled at once,
    never left open until the elicitation timeout (which would hold the outer call)."""
    import anyio

    model = senv.script({"tool_calls": [{"name": "mcp__rec__ask_name", "arguments": {}}]}, {"text": "Done."})
    config = senv.recorder_config()
    config["mcp_servers"]["rec"]["protocol"] = "legacy"
    config["mcp_servers"]["rec"]["trusted"] = True

    def answer(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"name": 42, "extra": "x"})

    async with connect("stdio", mode, senv, answer=answer) as client:
        with anyio.fail_after(30):
            result = await client.call_tool("agent", {"prompt": "greet", "model": model, "config": config})
    assert result.structured_content["text"] == "Done.", result
    assert senv.records() == [{"tool": "ask_name", "arguments": {"action": "cancel", "name": None}}]
    with ThreadStore(senv.home) as store:
        items = store.load(result.structured_content["thread_id"]).items
    [asked] = [i for i in items if i.type == "elicitation"]
    # Nobody's answer fitted: that is not the user's cancel.
    assert (asked.action, asked.by, asked.message) == (  # type: ignore[union-attr]
        "cancel", "unanswered", "The MCP client's answer did not fit the question."), asked
