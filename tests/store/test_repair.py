"""repair_open_calls: every function_call gets an output after a cut turn."""

from __future__ import annotations

from nbagent.protocol.items import FunctionCall, FunctionCallOutput, UserMessage
from nbagent.store import ABORTED_OUTPUT, open_calls, repair_open_calls
from tests.store.samples import every_item


def test_complete_history_needs_no_repair() -> None:
    assert repair_open_calls(every_item()) == []


def test_open_calls_get_aborted_outputs_in_order() -> None:
    items = [
        UserMessage(text="go", turn_id="t"),
        FunctionCall(call_id="a", name="x", arguments="{}", turn_id="t"),
        FunctionCall(call_id="b", name="y", arguments="{}", turn_id="t"),
        FunctionCallOutput(call_id="a", output="fine", turn_id="t"),
        FunctionCall(call_id="c", name="z", arguments="{}", turn_id="t"),
    ]
    assert [c.call_id for c in open_calls(items)] == ["b", "c"]
    repairs = repair_open_calls(items)
    assert [(r.call_id, r.turn_id, r.status, r.is_error, r.output) for r in repairs] == [
        ("b", "t", "aborted", True, ABORTED_OUTPUT),
        ("c", "t", "aborted", True, ABORTED_OUTPUT),
    ]
    assert repair_open_calls([*items, *repairs]) == []
