"""``script_from_thread`` on the shapes a rollout can take, and the scripted HTTP server of the
bring-your-own-model walkthrough as an HTTP caller meets it: the script replays what happened
and only that; the server answers only its token holder."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import openai
import pytest

from nbagent import Session
from nbagent.examples.openai_compatible_server import ScriptedChatServer
from nbagent.models.replay import choose, load_script
from nbagent.models.replay_export import script_from_thread
from nbagent.protocol import (
    ApprovalRecord,
    AssistantMessage,
    ElicitationRecord,
    FunctionCall,
    FunctionCallOutput,
    TurnRecord,
    UserMessage,
)


def turn(tid: str, status: str = "completed") -> list[TurnRecord]:
    return [TurnRecord(turn_id=tid, status="started"), TurnRecord(turn_id=tid, status=status)]  # type: ignore[arg-type]


def test_malformed_arguments_stay_verbatim_and_an_empty_last_reply_keeps_its_place(tmp_path: Path) -> None:
    items = [
        UserMessage(turn_id="t1", text="go"),
        FunctionCall(turn_id="t1", call_id="c1", name="add", arguments='{"a": 1, "b": '),
        FunctionCallOutput(turn_id="t1", call_id="c1", output="not valid JSON", is_error=True, status="failed"),
        UserMessage(turn_id="t2", text="again"),
        AssistantMessage(turn_id="t2", text="ok"),
    ]
    script = script_from_thread(items, turn("t1") + turn("t2"))
    assert script["responses"] == [{"tool_calls": [{"name": "add", "arguments": '{"a": 1, "b": '}]}, {}, {"text": "ok"}]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(script))
    assert len(load_script(path).responses) == 3


def test_a_declined_question_is_the_key_and_outside_calls_are_not_responses() -> None:
    items = [
        FunctionCall(turn_id="outside", call_id="o1", name="mcp__demo__list_notes", arguments="{}"),
        FunctionCallOutput(turn_id="outside", call_id="o1", output="(no notes yet)"),
        UserMessage(turn_id="t1", text="log it"),
        AssistantMessage(turn_id="t1", text="Logging."),
        FunctionCall(turn_id="t1", call_id="c1", name="mcp__demo__log_experiment", arguments='{"name": "b"}'),
        ApprovalRecord(turn_id="t1", call_id="c1", tool="mcp__demo__log_experiment", decision="approve", by="user"),
        ElicitationRecord(turn_id="t1", request_id="r1", server="demo", action="decline", by="user"),
        FunctionCallOutput(turn_id="t1", call_id="c1", output="declined", is_error=True, status="failed"),
        AssistantMessage(turn_id="t1", text="You declined, so nothing was logged."),
    ]
    script = script_from_thread(items, turn("outside") + turn("t1"))
    first, second = script["responses"]
    assert first["text"] == "Logging."
    assert list(second["branch"]) == ["declined", "default"]
    assert "question asked during mcp__demo__log_experiment was declined" in second["branch"]["default"]["text"]


def test_an_aborted_turn_adds_no_reply_that_never_came() -> None:
    items = [
        UserMessage(turn_id="t1", text="delete"),
        FunctionCall(turn_id="t1", call_id="c1", name="rm", arguments="{}"),
        ApprovalRecord(turn_id="t1", call_id="c1", tool="rm", decision="abort", by="user"),
        FunctionCallOutput(turn_id="t1", call_id="c1", output="aborted", is_error=True, status="aborted"),
    ]
    assert script_from_thread(items, turn("t1", "aborted"))["responses"] == [{"tool_calls": [{"name": "rm", "arguments": {}}]}]


def test_the_scripted_server_answers_only_its_token_on_localhost() -> None:
    with ScriptedChatServer([{"text": "hi"}]) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            request = urllib.request.Request(server.base_url + "/chat/completions", data=b"{}", headers=headers)
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=10)
            assert refused.value.code == 401
        auth = {"Authorization": f"Bearer {server.token}"}
        for body, length in ((b"[1, 2]", "6"), (b"{}", "-1"), (b"{}", "lots"), (b"{}", str(1 << 40))):
            request = urllib.request.Request(server.base_url + "/chat/completions", data=body,
                                             headers={**auth, "Content-Length": length})  # fmt: skip
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=10)
            assert refused.value.code == 400 and b"JSON object" in refused.value.read()
        assert server.requests == [] and server.replies == [{"text": "hi"}]


async def test_the_scripted_server_streams_through_the_real_openai_client(tmp_path: Path) -> None:
    replies = [{"text": "Adding.", "tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}, {"text": "It is 3."}]
    with ScriptedChatServer(replies) as server:
        toml = (f'model = "m"\nmodel_provider = "local"\napproval_policy = "full-auto"\n'
                f'[model_providers.local]\nbase_url = "{server.base_url}"\nwire_api = "chat"\nenv_key = "SCRIPTED_KEY"\n')  # fmt: skip
        (tmp_path / "nbagent.toml").write_text(toml)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("SCRIPTED_KEY", server.token)
            patch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
            async with Session(cwd=tmp_path) as session:
                session.register_tool(lambda a, b: a + b, name="add")
                result = await session.run("add 1 and 2")
        assert result.text == "It is 3."
        assert [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"] == ["3"]
        bad = openai.OpenAI(base_url=server.base_url, api_key="wrong", max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            bad.models.list()


def test_an_approved_call_that_fails_in_the_replay_does_not_hear_the_recorded_success() -> None:
    asked = [
        UserMessage(turn_id="t1", text="write"),
        FunctionCall(turn_id="t1", call_id="c1", name="mcp__demo__write_note", arguments="{}"),
        ApprovalRecord(turn_id="t1", call_id="c1", tool="mcp__demo__write_note", decision="approve", by="user"),
    ]
    recorded = [*asked, FunctionCallOutput(turn_id="t1", call_id="c1", output="wrote"),
                AssistantMessage(turn_id="t1", text="Written.")]  # fmt: skip
    reply = script_from_thread(recorded, turn("t1"))["responses"][1]
    failed = [*asked, FunctionCallOutput(turn_id="t1", call_id="c1", output="disk full", is_error=True, status="failed")]
    assert choose(Path("s.json"), 1, reply, recorded[:-1]) == {"text": "Written."}
    assert "went otherwise" in choose(Path("s.json"), 1, reply, failed)["text"]
