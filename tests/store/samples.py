"""Sample items of every type, shared by the store tests and the crash child."""

from __future__ import annotations

import json

from nbagent.protocol.items import (
    ApprovalRecord,
    AssistantMessage,
    ElicitationRecord,
    FunctionCall,
    FunctionCallOutput,
    Item,
    ReasoningItem,
    UserMessage,
)
from nbagent.protocol.tools import ImageBlock, ResourceBlock, TextBlock


def every_item(turn_id: str = "turn_1") -> list[Item]:
    """One of each item type, with every optional field set, non-ASCII and escapes included."""
    return [
        UserMessage(turn_id=turn_id, text="plot the data\nwith \"quotes\" and ünïcode ✓"),
        ReasoningItem(turn_id=turn_id, summary="think first", encrypted_content="gAAAA=="),
        FunctionCall(
            turn_id=turn_id,
            call_id="call_1",
            name="demo__read",
            arguments=json.dumps({"path": "a.csv", "n": 3}),
            server="demo",
            raw_tool="read",
        ),
        ApprovalRecord(
            turn_id=turn_id,
            call_id="call_1",
            tool="demo__read",
            server="demo",
            raw_tool="read",
            decision="approved",
            by="user",
            message="ok",
            arguments={"path": "a.csv", "n": 3},
        ),
        FunctionCallOutput(
            turn_id=turn_id,
            call_id="call_1",
            output="a,b\n1,2",
            is_error=False,
            status="completed",
            content=[
                TextBlock(text="a,b\n1,2"),
                ImageBlock(data="iVBORw0KGgo=", mime_type="image/png"),
                ResourceBlock(uri="file:///a.csv", mime_type="text/csv", text="a,b", name="a.csv"),
            ],
            structured={"rows": [[1, 2]], "nested": {"x": None, "y": 1.5}},
            duration_ms=12.5,
        ),
        ElicitationRecord(
            turn_id=turn_id, request_id="el_1", server="demo", action="accept", by="user", content={"color": "red"}
        ),
        AssistantMessage(turn_id=turn_id, text="Done."),
    ]
