"""The scripted replay model: order, exhaustion, and errors that name the file and the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nbagent.models.base import ModelError, ModelRequest, ReasoningDone, ReasoningSummaryDelta, TextDelta, Usage
from nbagent.models.replay import ReplayModel, words
from nbagent.protocol import ApprovalRecord, ElicitationRecord, FunctionCall, FunctionCallOutput, UserMessage
from tests.models.helpers import calls_of, collect, text_of

FIXTURES = Path(__file__).parent.parent / "fixtures"


def _write(tmp_path: Path, data: object, name: str = "script.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


async def test_consumes_responses_in_order() -> None:
    model = ReplayModel("replay_tool_loop.json", cwd=FIXTURES)
    assert model.scripted is True and model.label == "scripted replay: replay_tool_loop.json"

    first = await collect(model)
    assert "".join(e.delta for e in first if isinstance(e, ReasoningSummaryDelta)) == "The user wants a sum; use the tool."
    assert [e.summary for e in first if isinstance(e, ReasoningDone)] == ["The user wants a sum; use the tool."]
    assert len([e for e in first if isinstance(e, TextDelta)]) == 4 and text_of(first) == "Let me add those."
    [call] = calls_of(first)
    assert (call.call_id, call.name, json.loads(call.arguments)) == ("call_replay_1_1", "add", {"a": 2, "b": 3})
    assert first[-1].type == "completed" and first[-1].text == "Let me add those."

    second = await collect(model)
    [bad] = calls_of(second)
    assert bad.arguments == '{"a": 5, "b": ' and bad.call_id == "call_replay_2_1"

    third = await collect(model)
    assert text_of(third) == "The sum is 5."
    assert [(u.input_tokens, u.output_tokens) for u in third if isinstance(u, Usage)] == [(12, 5)]


async def test_position_is_per_instance() -> None:
    one, two = ReplayModel(FIXTURES / "replay_tool_loop.json"), ReplayModel(FIXTURES / "replay_tool_loop.json")
    await collect(one)
    await collect(one)
    assert text_of(await collect(two)) == "Let me add those."
    assert text_of(await collect(one)) == "The sum is 5."


async def test_exhausted(tmp_path: Path) -> None:
    model = ReplayModel(_write(tmp_path, {"responses": [{"text": "only one"}]}))
    await collect(model)
    with pytest.raises(ModelError) as info:
        await collect(model)
    assert info.value.code == "replay_exhausted"
    assert "script.json" in str(info.value) and "1 response" in str(info.value)


async def test_empty_response_and_scripted_error(tmp_path: Path) -> None:
    model = ReplayModel(_write(tmp_path, {"responses": [{}, {"error": {"code": "auth", "message": "scripted 401"}}]}))
    events = await collect(model)
    assert [e.type for e in events] == ["usage", "completed"]  # a real model counts the request it was sent
    with pytest.raises(ModelError) as info:
        await collect(model)
    assert (info.value.code, str(info.value)) == ("auth", "scripted 401")


@pytest.mark.parametrize(
    ("content", "key"),
    [
        ("{not json", "invalid JSON"),
        ({"answers": []}, "'responses'"),
        ({"responses": {}}, "'responses'"),
        ({"responses": ["text"]}, "'responses[0]'"),
        ({"responses": [{"txt": "typo"}]}, "'responses[0].txt'"),
        ({"responses": [{"text": 3}]}, "'responses[0].text'"),
        ({"responses": [{}, {"tool_calls": [{"arguments": {}}]}]}, "'responses[1].tool_calls[0].name'"),
        ({"responses": [{"tool_calls": [{"name": "t", "arguments": 5}]}]}, "'responses[0].tool_calls[0].arguments'"),
        ({"responses": [{"tool_calls": {"name": "t"}}]}, "'responses[0].tool_calls'"),
        ({"responses": [{"error": {"code": "nope"}}]}, "'responses[0].error.code'"),
    ],
)
async def test_bad_file_names_file_and_key(tmp_path: Path, content: object, key: str) -> None:
    model = ReplayModel(_write(tmp_path, content, "broken.json"))
    with pytest.raises(ModelError) as info:
        await collect(model)
    assert info.value.code == "bad_request"
    assert str(tmp_path / "broken.json") in str(info.value) and key in str(info.value)


async def test_missing_file(tmp_path: Path) -> None:
    model = ReplayModel("nowhere.json", cwd=tmp_path)
    with pytest.raises(ModelError) as info:
        model.load()
    assert info.value.code == "bad_request" and str(tmp_path / "nowhere.json") in str(info.value)


@pytest.mark.parametrize("text", ["", "one", "  leading and trailing  ", "a\n\nb\tc"])
def test_words_join_back(text: str) -> None:
    assert "".join(words(text)) == text


# -- branching on the previous call's outcome -----------------------------------------------------

def _history(*records: object) -> ModelRequest:
    call = FunctionCall(call_id="c1", name="mcp__demo__write_note", arguments="{}")
    return ModelRequest(model="m", items=[UserMessage(text="go"), call, *records])  # type: ignore[list-item]


BRANCHED = {"responses": [{"branch": {
    "declined": {"text": "you declined"},
    "denied": {"text": "you denied"},
    "error": {"text": "it failed"},
    "approved": {"text": "you approved"},
    "none": {"text": "no call yet"},
    "default": {"text": "something else"},
}}]}


@pytest.mark.parametrize(
    ("records", "said"),
    [
        ((ApprovalRecord(call_id="c1", tool="t", decision="approve", by="user"),
          FunctionCallOutput(call_id="c1", output="wrote it")), "you approved"),
        ((ApprovalRecord(call_id="c1", tool="t", decision="deny", by="user"),
          FunctionCallOutput(call_id="c1", output="denied", is_error=True, status="denied")), "you denied"),
        ((ApprovalRecord(call_id="c1", tool="t", decision="approve_session", by="user"),
          FunctionCallOutput(call_id="c1", output="boom", is_error=True, status="failed")), "it failed"),
        ((ElicitationRecord(request_id="e1", server="demo", action="decline", by="user"),
          FunctionCallOutput(call_id="c1", output="declined", is_error=True, status="failed")), "you declined"),
        ((ElicitationRecord(request_id="e1", server="demo", action="accept", by="user"),
          FunctionCallOutput(call_id="c1", output="logged")), "something else"),
        # a decision about another call says nothing about this one
        ((ApprovalRecord(call_id="other", tool="t", decision="deny", by="user"),
          FunctionCallOutput(call_id="c1", output="ok")), "something else"),
    ],
)
async def test_a_branch_follows_what_happened_to_the_previous_call(tmp_path: Path, records, said) -> None:
    model = ReplayModel(_write(tmp_path, BRANCHED))
    assert text_of(await collect(model, _history(*records))) == said


async def test_first_matching_branch_in_file_order_then_default_and_none(tmp_path: Path) -> None:
    # declined AND error hold for a declined question: the file's order decides
    order = {"responses": [{"branch": {"error": {"text": "failed"}, "declined": {"text": "declined"}}}] * 2
             + [{"branch": {"none": {"text": "nothing before"}}}]}
    model = ReplayModel(_write(tmp_path, order))
    declined = _history(ElicitationRecord(request_id="e1", server="s", action="decline", by="user"),
                        FunctionCallOutput(call_id="c1", output="x", is_error=True, status="failed"))
    assert text_of(await collect(model, declined)) == "failed"
    ok = _history(FunctionCallOutput(call_id="c1", output="fine"))
    with pytest.raises(ModelError) as info:  # no branch for "ok" and no default: say so
        await collect(model, ok)
    assert "responses[1].branch" in str(info.value) and "ok" in str(info.value) and "default" in str(info.value)
    assert text_of(await collect(model)) == "nothing before"


async def test_a_branch_can_call_tools(tmp_path: Path) -> None:
    script = {"responses": [{"branch": {"default": {"text": "again", "tool_calls": [{"name": "t", "arguments": {"a": 1}}]}}}]}
    [call] = calls_of(await collect(ReplayModel(_write(tmp_path, script))))
    assert (call.name, json.loads(call.arguments), call.call_id) == ("t", {"a": 1}, "call_replay_1_1")


@pytest.mark.parametrize(
    ("response", "key"),
    [
        ({"branch": {"maybe": {"text": "x"}}}, "'responses[0].branch.maybe'"),
        ({"branch": {"denied": {"txt": "x"}}}, "'responses[0].branch.denied.txt'"),
        ({"branch": {"denied": "x"}}, "'responses[0].branch.denied'"),
        ({"branch": []}, "'responses[0].branch'"),
        ({"branch": {}}, "'responses[0].branch'"),
        ({"branch": {"ok": {"text": "x"}}, "text": "y"}, "'responses[0].text'"),
        ({"branch": {"ok": {"branch": {"ok": {}}}}}, "'responses[0].branch.ok.branch'"),
    ],
)
async def test_bad_branch_names_file_and_key(tmp_path: Path, response: object, key: str) -> None:
    model = ReplayModel(_write(tmp_path, {"responses": [response]}, "broken.json"))
    with pytest.raises(ModelError) as info:
        await collect(model)
    assert info.value.code == "bad_request" and "broken.json" in str(info.value) and key in str(info.value)
