"""Making a thread valid again after a crash, an interrupt or a damaged line.

A model API rejects a history in which a ``function_call`` has no ``function_call_output``, or
an output has no call before it. A turn cut mid-call leaves the first, so the core appends
"aborted" outputs on resume; a call's line lost to damage leaves the second, so its output is
left out of the history the model is sent (the rollout keeps it).
"""

from __future__ import annotations

from collections.abc import Iterable

from nbagent.protocol.items import FunctionCall, FunctionCallOutput, Item

__all__ = ["ABORTED_OUTPUT", "open_calls", "repair_open_calls", "without_orphan_outputs"]

ABORTED_OUTPUT = "aborted: the session ended before this call finished"


def open_calls(items: Iterable[Item]) -> list[FunctionCall]:
    """Function calls without an output, in history order."""
    calls: dict[str, FunctionCall] = {}
    answered: set[str] = set()
    for item in items:
        if isinstance(item, FunctionCall):
            calls.setdefault(item.call_id, item)
        elif isinstance(item, FunctionCallOutput):
            answered.add(item.call_id)
    return [c for cid, c in calls.items() if cid not in answered]


def repair_open_calls(items: Iterable[Item], output: str = ABORTED_OUTPUT) -> list[FunctionCallOutput]:
    """The "aborted" outputs that give every open call an answer; empty when none is open.

    They are not appended here: the caller writes them to the rollout and history, so the
    repair is itself a recorded fact.
    """
    return [
        FunctionCallOutput(
            call_id=c.call_id,
            turn_id=c.turn_id,
            output=output,
            is_error=True,
            status="aborted",
        )
        for c in open_calls(items)
    ]


def without_orphan_outputs(items: Iterable[Item]) -> tuple[list[Item], list[FunctionCallOutput]]:
    """``items`` without the outputs that follow no call of theirs, and those outputs."""
    kept: list[Item] = []
    orphans: list[FunctionCallOutput] = []
    called: set[str] = set()
    for item in items:
        if isinstance(item, FunctionCall):
            called.add(item.call_id)
        elif isinstance(item, FunctionCallOutput) and item.call_id not in called:
            orphans.append(item)
            continue
        kept.append(item)
    return kept, orphans
