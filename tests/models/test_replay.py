"""The scripted replay model: order, exhaustion, and errors that name the file and the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nbagent.models.base import ModelError, ReasoningDone, ReasoningSummaryDelta, TextDelta, Usage
from nbagent.models.replay import ReplayModel, words
from tests.models.helpers import arg_deltas, calls_of, collect, text_of

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
    assert "".join(arg_deltas(first, call.call_id)) == call.arguments
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
    assert [e.type for e in events] == ["completed"]
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
