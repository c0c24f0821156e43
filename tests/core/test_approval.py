"""The approval table, exhaustively, and "no execution without a recorded decision"."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from nbagent import Session
from nbagent.core.approval import ApprovalMemory, ask_reason
from nbagent.core.provider import ToolProvider
from nbagent.protocol import ApprovalDecision, ApprovalRecord, CallInfo, Event, ToolAnnotations, ToolResult, ToolSpec

POLICIES = ["untrusted", "on-request", "never", "full-auto"]
MODES = ["auto", "prompt", "approve"]
ANNOTATIONS: dict[str, ToolAnnotations | None] = {
    "none": None,
    "read_only": ToolAnnotations(read_only_hint=True),
    "read_only_destructive": ToolAnnotations(read_only_hint=True, destructive_hint=True),
    "writes": ToolAnnotations(read_only_hint=False),
    "destructive": ToolAnnotations(destructive_hint=True),
}

# Which combinations run without asking, spelled out row by row (DESIGN §5).
RUNS_WITHOUT_ASKING = {
    ("full-auto", "*", "*", "*", "*"),
    ("*", "*", "*", "*", "remembered"),
    ("on-request", "approve", "*", "*", "*"),
    ("never", "approve", "*", "*", "*"),
    ("on-request", "auto", "read_only", "trusted", "*"),
    ("never", "auto", "read_only", "trusted", "*"),
}


def runs_without_asking(*combo: str) -> bool:
    return any(all(r in ("*", c) for r, c in zip(row, combo, strict=True)) for row in RUNS_WITHOUT_ASKING)


def spec_for(mode: str, annotations: str, trusted: bool, index: int) -> ToolSpec:
    return ToolSpec(
        name=f"tool_{index}",
        raw_name=f"tool_{index}",
        server="recorder",
        source="mcp",
        approval_mode=mode,  # type: ignore[arg-type]
        annotations=ANNOTATIONS[annotations],
        trusted=trusted,
        definition_hash=f"h{index}",
    )


@pytest.mark.parametrize(
    ("policy", "mode", "annotations", "trusted", "remembered"),
    list(itertools.product(POLICIES, MODES, ANNOTATIONS, ["trusted", "untrusted"], ["remembered", "new"])),
)
def test_the_approval_table(policy: str, mode: str, annotations: str, trusted: str, remembered: str) -> None:
    spec = spec_for(mode, annotations, trusted == "trusted", 0)
    reason = ask_reason(spec, policy, remembered == "remembered")  # type: ignore[arg-type]
    assert (reason is None) == runs_without_asking(policy, mode, annotations, trusted, remembered)


def test_a_changed_definition_drops_the_memory_and_says_so() -> None:
    memory = ApprovalMemory()
    spec = spec_for("auto", "writes", True, 0)
    memory.remember(spec)
    assert memory.check(spec) == (True, None)
    changed = spec.model_copy(update={"definition_hash": "other", "description": "now deletes everything"})
    remembered, why = memory.check(changed)
    assert not remembered and "changed its description since" in why
    assert memory.check(spec) == (False, None)


class RecordingProvider(ToolProvider):
    """A tool source that records every execution it receives (the server-side evidence)."""

    def __init__(self, specs: list[ToolSpec]) -> None:
        self.specs = specs
        self.executed: list[str] = []

    def list_tools(self) -> Sequence[ToolSpec]:
        return self.specs

    async def call_tool(self, spec: ToolSpec, arguments: dict[str, Any], call: CallInfo, on_progress=None) -> ToolResult:
        self.executed.append(call.call_id)
        return ToolResult.text("ran")


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("answer", ["deny", "approve"])
async def test_no_call_executes_without_a_recorded_decision(home: Path, script, policy: str, answer: str) -> None:
    combos = list(itertools.product(MODES, ANNOTATIONS, [True, False], [True, False]))
    specs = [spec_for(m, a, t, i) for i, (m, a, t, _) in enumerate(combos)]
    provider = RecordingProvider(specs)
    calls = [{"name": s.name, "arguments": {}, "call_id": f"c{i}"} for i, s in enumerate(specs)]
    asked: set[str] = set()
    async with Session(model=script({"tool_calls": calls}, {"text": "ok"}), interactive=True) as session:
        session.add_provider(provider)
        for spec, (_, _, _, remembered) in zip(specs, combos, strict=True):
            if remembered:
                session._approvals.memory.remember(spec)

        def front_end(event: Event) -> None:
            if event.msg.type == "approval_requested":
                asked.add(event.msg.call_id)
                session.submit(ApprovalDecision(call_id=event.msg.call_id, decision=answer))  # type: ignore[arg-type]

        session.subscribe(front_end)
        result = await session.run("call everything", policy=policy)  # type: ignore[arg-type]
    records = {r.call_id: r for r in result.items if isinstance(r, ApprovalRecord)}
    for i, (mode, annotation, trusted, remembered) in enumerate(combos):
        call_id = f"c{i}"
        free = runs_without_asking(
            policy, mode, annotation, "trusted" if trusted else "untrusted", "remembered" if remembered else "new"
        )
        executed = call_id in provider.executed
        if free:
            assert executed and call_id not in asked
        elif policy == "never":
            assert not executed and records[call_id].by == "policy" and call_id not in asked
        else:
            assert call_id in asked and records[call_id].by == "user"
            assert executed == (answer == "approve")
        if executed and not free:
            assert records[call_id].decision == "approve"
    assert len(provider.executed) == len(set(provider.executed))
