"""``apply_patch`` in a real session on the replay model: approved, the files change and the call's
events carry every file's change before and after; denied, nothing changes and no patch event is
sent; the rollout keeps the changes; a hunk that does not match is an error the model reads."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nbagent import Session
from nbagent.config import load_config
from nbagent.kit.turn import TurnModel, change_lines
from nbagent.protocol import ApprovalDecision, Event
from nbagent.tools import shell_policy
from nbagent.tools.patch import PatchTools
from tests.core import conftest

home, script = conftest.home, conftest.script  # the fixtures: an empty home, replay scripts

PATCH = "\n".join(
    [
        "*** Begin Patch",
        "*** Add File: notes/todo.md",
        "+# To do",
        "*** Update File: app.py",
        "@@ def total(items):",
        "-    return 0",
        "+    return sum(items)",
        "*** End Patch",
    ]
)
APP = "def total(items):\n    return 0\n"


@pytest.fixture
def work(home: Path, tmp_path: Path) -> Path:
    work = tmp_path / "work"  # the home fixture made it and went into it
    (work / "app.py").write_text(APP)
    return work


def model(script: Callable[..., str], patch: str = PATCH) -> str:
    return script({"tool_calls": [{"name": "apply_patch", "arguments": {"input": patch}}]}, {"text": "done"})


async def run(work: Path, model: str, decision: str | None) -> tuple[list[Event], Any]:
    seen: list[Event] = []
    async with Session(model=model, cwd=work, interactive=True, policy="on-request") as session:
        session.add_provider(PatchTools(work))

        def front_end(event: Event) -> None:
            seen.append(event)
            if event.msg.type == "approval_requested" and decision is not None:
                session.submit(ApprovalDecision(call_id=event.msg.call_id, decision=decision))  # type: ignore[arg-type]

        session.subscribe(front_end)
        result = await asyncio.wait_for(session.run("edit"), 30)
    return seen, result


async def test_an_approved_patch_changes_the_files_and_its_events_carry_each_change(
    work: Path, script: Callable[..., str], home: Path
) -> None:
    seen, result = await run(work, model(script), "approve")
    assert (work / "notes/todo.md").read_text() == "# To do\n"
    assert (work / "app.py").read_text() == "def total(items):\n    return sum(items)\n"
    types = [e.msg.type for e in seen]
    assert types.index("approval_requested") < types.index("patch_apply_begin") < types.index("patch_apply_end")
    begin, end = (next(e for e in seen if e.msg.type == t) for t in ("patch_apply_begin", "patch_apply_end"))
    assert begin.turn_id == result.turn_id and end.msg.success  # type: ignore[union-attr]
    changes = [(c.kind, c.path) for c in begin.msg.changes]  # type: ignore[union-attr]
    assert changes == [("add", "notes/todo.md"), ("update", "app.py")]
    assert "-    return 0\n+    return sum(items)\n" in begin.msg.changes[1].unified_diff  # type: ignore[union-attr]
    assert end.msg.stdout == "Success. Updated the following files:\nA notes/todo.md\nM app.py\n"  # type: ignore[union-attr]
    lines = [json.loads(line) for line in (home / "threads" / f"{end.thread_id}.jsonl").read_text().splitlines()]
    [output] = [x["item"] for x in lines if x["type"] == "item" and x["item"]["type"] == "function_call_output"]
    recorded = output["structured"]["changes"]
    assert [(c["kind"], c["path"]) for c in recorded] == changes and "sum(items)" in recorded[1]["unified_diff"]


async def test_every_front_end_draws_one_line_per_changed_file(work: Path, script: Callable[..., str]) -> None:
    from nbagent.cli import _text
    from nbagent.notebook.render import WidgetTurn
    from nbagent.notebook.text_render import TextTurn
    from nbagent.server.forward import describe

    seen, _ = await run(work, model(script), "approve")
    lines = ["A notes/todo.md +1 −0", "M app.py +1 −1"]
    model_ = TurnModel()
    folded = [model_.apply(e) for e in seen]
    [card] = model_.cards.values()
    assert card.applied is True and change_lines(card) == lines
    header = {"model_label": "replay", "scripted": True, "thread": "t", "policy": "on-request"}
    printed: list[str] = []
    text = TextTurn(lambda op: None, out=printed.append, **header)  # type: ignore[arg-type]
    widgets = WidgetTurn(lambda op: None, **header)  # type: ignore[arg-type]
    for event in seen:
        text.handle(event)
        widgets.handle(event)
    assert "  A notes/todo.md +1 −0\n  M app.py +1 −1\n" in "".join(printed)
    assert all(line in widgets.cards[card.call_id].changes.value for line in lines)
    assert "  A notes/todo.md +1 −0\n  M app.py +1 −1\n" in "".join(_text(change) for change in folded)
    assert any("; ".join(lines) in (describe(change, "patch_apply_end")[0] or "") for change in folded)


async def test_a_denied_patch_leaves_the_files_untouched(work: Path, script: Callable[..., str]) -> None:
    seen, result = await run(work, model(script), "deny")
    assert (work / "app.py").read_text() == APP and not (work / "notes").exists()
    assert not [e for e in seen if e.msg.type.startswith("patch_apply")]
    [output] = [i for i in result.items if i.type == "function_call_output"]
    assert output.status == "denied"


async def test_a_hunk_that_does_not_match_is_an_error_naming_the_file_and_hunk(
    work: Path, script: Callable[..., str]
) -> None:
    wrong = PATCH.replace("-    return 0", "-    return 1")
    seen, result = await run(work, model(script, wrong), "approve")
    [output] = [i for i in result.items if i.type == "function_call_output"]
    assert output.is_error and "Failed to find expected lines in app.py: hunk 1" in output.output
    assert (work / "app.py").read_text() == APP and not (work / "notes").exists()
    assert not [e for e in seen if e.msg.type.startswith("patch_apply")]


def test_the_tool_writes_the_workspace_and_the_sandboxs_other_roots_and_never_what_it_hides(
    work: Path, tmp_path: Path
) -> None:
    (tmp_path / "shared").mkdir()
    overrides = {"sandbox_mode": "workspace-write", "sandbox_workspace_write": {"writable_roots": ["../shared"]}}
    config = load_config(work, overrides=overrides)
    tools = PatchTools.within(shell_policy(config))
    assert tools.workspace == str(work.resolve())
    assert tools.roots == (str(work.resolve()), str((tmp_path / "shared").resolve()))
    assert str(config.home_path.resolve()) in tools.denied
    spec = tools.list_tools()[0]
    assert spec.name == "apply_patch" and list(spec.parameters["properties"]) == ["input"]
    assert spec.annotations is not None and spec.annotations.read_only_hint is False
