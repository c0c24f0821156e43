"""Arguments Python's ``json`` reads but JSON cannot carry, and decisions recorded whatever follows.

A lone surrogate (``"\\ud800"``) is not Unicode text: no event, record or request holding it can
be encoded. NaN and Infinity are no JSON numbers: the panel would show them and the server be sent
``null``. Either is refused before any approval, naming where it sits, with a message the model
reads; the same for arguments a person edits. Once a person has decided, the decision is in the
rollout, whatever fails after it (an "Always" whose config file cannot be written, a reason
that cannot be encoded).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from nbagent import Session
from nbagent.config import Config
from nbagent.notebook.approval import ApprovalPanel
from nbagent.protocol import ApprovalDecision, ApprovalRequested, CallTool, Event
from nbagent.store.rollout import read_rollout
from tests.core.conftest import home, script  # noqa: F401 - fixtures
from tests.mcp.conftest import records, server_cfg
from tests.security.test_always_where_written import Warnings

PUT = "mcp__any__put"
FIX = "Send strings of Unicode text"

REFUSED = {  # call id -> (the model's arguments as it sent them, what the model reads)
    "call_escape": ('{"value": "a\\ud800"}', "the argument value holds a lone surrogate (\\ud800), which is not Unicode text"),
    "call_raw": ('{"value": "a\ud800"}', "the argument value holds a lone surrogate (\\ud800), which is not Unicode text"),
    "call_key": ('{"value": {"\\udfff": 1}}', "a name in the argument value holds a lone surrogate (\\udfff)"),
    "call_nan": ('{"value": [1, NaN]}', "the argument value/1 is NaN, which JSON has no number for"),
    "call_inf": ('{"value": {"x": Infinity}}', "the argument value/x is Infinity, which JSON has no number for"),
    "call_ninf": ('{"value": -Infinity}', "the argument value is -Infinity, which JSON has no number for"),
}


def _session(tmp_path: Path, *responses: dict[str, Any]) -> tuple[Config, Path]:
    """A replay model and the ``takes_any`` server under ``on-request`` (its ``put`` asks)."""
    (replay := tmp_path / "script.json").write_text(json.dumps({"responses": list(responses)}))
    record = tmp_path / "record.jsonl"
    config = Config(model=f"replay:{replay}", approval_policy="on-request", home=str(tmp_path / "home"),
                    mcp_servers={"any": server_cfg("takes_any.py", record)})  # fmt: skip
    return config, record


def _rollout(config: Config, thread_id: str) -> list[Any]:
    """The rollout's items, every line of it read back."""
    lines, warnings = read_rollout(Path(config.home or "") / "threads" / f"{thread_id}.jsonl")
    assert warnings == []
    return [line.item for line in lines if line.type == "item"]


@pytest.mark.timeout(60)
async def test_arguments_json_cannot_carry_are_refused_before_the_approval_naming_where(tmp_path: Path) -> None:
    """Each refused call is told what and where, with no panel and nothing sent; the plain call
    beside them is asked about, approved and run, and the turn completes."""
    calls = [{"call_id": key, "name": PUT, "arguments": raw} for key, (raw, _) in REFUSED.items()]
    plain = {"call_id": "call_plain", "name": PUT, "arguments": '{"value": "fine"}'}
    config, record = _session(tmp_path, {"tool_calls": [*calls, plain]}, {"text": "done"})
    asked: list[str] = []
    async with Session(config=config, interactive=True) as session:

        def front_end(event: Event) -> None:
            if event.msg.type == "approval_requested":
                asked.append(event.msg.call_id)
                session.submit(ApprovalDecision(call_id=event.msg.call_id, decision="approve"))

        session.subscribe(front_end)
        result = await session.run("go")
    assert (result.status, result.error) == ("completed", None)
    assert asked == ["call_plain"]
    items = _rollout(config, result.thread_id)
    outputs = {i.call_id: i for i in items if i.type == "function_call_output"}
    for call_id, (_, told) in REFUSED.items():
        output = outputs[call_id]
        assert output.status == "failed" and output.output.startswith(f"could not call {PUT}: {told}"), output
        assert FIX in output.output
    assert outputs["call_plain"].status == "completed"
    assert [(i.call_id, i.decision) for i in items if i.type == "approval"] == [("call_plain", "approve")]
    assert [r["value"] for r in records(record)] == ["fine"]


BAD_EDITS: list[tuple[dict[str, Any], str]] = [
    ({"value": "\ud800"}, "the argument value holds a lone surrogate (\\ud800), which is not Unicode text"),
    ({"value": {"\udfff": 1}}, "a name in the argument value holds a lone surrogate (\\udfff), which is not Unicode text"),
    ({"value": [math.nan]}, "the argument value/0 is NaN, which JSON has no number for"),
    ({"value": {"x": -math.inf}}, "the argument value/x is -Infinity, which JSON has no number for"),
]


@pytest.mark.timeout(60)
async def test_edited_arguments_json_cannot_carry_are_refused_and_the_call_still_waits(tmp_path: Path) -> None:
    """Each bad edit is refused with a warning naming where; the approval still waits, and the
    model's own arguments run once approved as they are."""
    config, record = _session(tmp_path, {"tool_calls": [{"call_id": "call_1", "name": PUT, "arguments": '{"value": "as asked"}'}]},
                              {"text": "done"})  # fmt: skip
    edits = [edit for edit, _ in BAD_EDITS]
    async with Session(config=config, interactive=True) as session:
        warned = Warnings(session)

        def front_end(event: Event) -> None:
            if event.msg.type == "approval_requested" or (event.msg.type == "warning" and "edited" in event.msg.message):
                edit = edits.pop(0) if edits else None
                session.submit(ApprovalDecision(call_id="call_1", decision="approve", arguments=edit))

        session.subscribe(front_end)
        result = await session.run("go")
    assert (result.status, result.error) == ("completed", None)
    assert warned == [f"edited arguments for call_1 rejected: arguments: {told}" for _, told in BAD_EDITS]
    assert [r["value"] for r in records(record)] == ["as asked"]
    assert [(i.decision, i.arguments) for i in _rollout(config, result.thread_id) if i.type == "approval"] == [
        ("approve", {"value": "as asked"})
    ]


@pytest.mark.parametrize(
    ("typed", "told"),
    [
        ('{"value": "\\ud800"}', "the argument value holds a lone surrogate (\\ud800), which is not Unicode text"),
        ('{"value": NaN}', "the argument value is NaN, which JSON has no number for"),
        ('{"value": [Infinity]}', "the argument value/0 is Infinity, which JSON has no number for"),
    ],
    ids=["surrogate", "nan", "infinity"],
)
def test_the_panel_refuses_edits_json_cannot_carry_and_sends_nothing(typed: str, told: str) -> None:
    request = ApprovalRequested(call_id="call_1", tool=PUT, arguments={"value": "as asked"}, reason="destructive")
    sent: list[ApprovalDecision] = []
    panel = ApprovalPanel(request, sent.append)
    panel.arguments.value = typed
    assert panel.decide("approve") is False
    assert sent == [] and panel.sent is None
    assert told in panel.problems.value


@pytest.mark.timeout(60)
async def test_always_is_recorded_and_runs_when_its_config_file_cannot_be_written(
    home: Path, script: Any  # noqa: F811
) -> None:
    """The folder's ``nbagent.toml`` is broken while the approval waits: the "Always" cannot be
    written, yet the person's decision is recorded, the call runs, and a warning says it holds
    for this session only."""
    work = Path.cwd()
    server = {"command": server_cfg("echo.py").command, "args": server_cfg("echo.py").args}
    (work / ".mcp.json").write_text(json.dumps({"mcpServers": {"echo": server}}))
    call = {"tool_calls": [{"call_id": "call_1", "name": "mcp__echo__echo", "arguments": {"text": "hi"}}]}
    async with Session(model=script(call, {"text": "done"}), interactive=True) as session:
        warned = Warnings(session)

        def front_end(event: Event) -> None:
            if event.msg.type == "approval_requested":
                (work / "nbagent.toml").write_text("[broken\n")
                session.submit(ApprovalDecision(call_id="call_1", decision="always"))

        session.subscribe(front_end)
        result = await session.run("go")
        items = session._thread.items
    assert (result.status, result.error) == ("completed", None)
    assert [(i.decision, i.by) for i in items if i.type == "approval"] == [("always", "user")]
    assert [i.status for i in items if i.type == "function_call_output"] == ["completed"]
    (warning,) = [w for w in warned if "'always'" in w]
    assert warning.startswith(f"mcp__echo__echo could not be saved to its config file ({work / 'nbagent.toml'}: invalid TOML")
    assert warning.endswith("'always' applies to this session only")
    assert (work / "nbagent.toml").read_text() == "[broken\n"


@pytest.mark.timeout(60)
async def test_a_reason_that_is_not_unicode_text_is_recorded_readably(tmp_path: Path) -> None:
    """A deny reason holding a lone surrogate (``session.submit`` from code, a comm message) is
    recorded and told to the model with the replacement character in its place."""
    config, record = _session(tmp_path, {"tool_calls": [{"call_id": "call_1", "name": PUT, "arguments": '{"value": 1}'}]},
                              {"text": "done"})  # fmt: skip
    async with Session(config=config, interactive=True) as session:

        def front_end(event: Event) -> None:
            if event.msg.type == "approval_requested":
                session.submit(ApprovalDecision(call_id="call_1", decision="deny", message="not \ud800 now"))

        session.subscribe(front_end)
        result = await session.run("go")
    assert (result.status, result.error) == ("completed", None)
    items = _rollout(config, result.thread_id)
    assert [(i.decision, i.by, i.message) for i in items if i.type == "approval"] == [("deny", "user", "not \ufffd now")]
    (output,) = [i for i in items if i.type == "function_call_output"]
    assert output.status == "denied" and "Reason: not \ufffd now" in output.output
    assert records(record) == []


@pytest.mark.timeout(60)
async def test_an_outside_call_with_arguments_json_cannot_carry_is_refused(tmp_path: Path) -> None:
    """``Session.call_tool`` (``%agent serve``'s caller) hands over arguments already parsed:
    under ``full-auto``, where nothing asks, they are refused the same way and the server gets
    nothing."""
    config, record = _session(tmp_path)
    config.approval_policy = "full-auto"
    async with Session(config=config) as session:
        await session._servers.ready()
        refused = [await session.perform(CallTool(name=PUT, arguments=edit)) for edit, _ in BAD_EDITS]
        ran = await session.perform(CallTool(name=PUT, arguments={"value": 1.5}))
    for result, (_, told) in zip(refused, BAD_EDITS, strict=True):
        assert result.status == "failed" and result.output.startswith(f"could not call {PUT}: {told}"), result
    assert ran.status == "completed", ran
    assert [r["value"] for r in records(record)] == [1.5]
