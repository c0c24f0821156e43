"""An approval of a change carries the change as a diff against what is there when it is asked:
``apply_patch``'s every file (read at approval time, not when the model wrote the patch), and
every front end that shows the ask shows the diff; a patch that would not apply says why."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from nbagent.cli import _text
from nbagent.kit.turn import TurnModel
from nbagent.notebook.text_render import TextTurn
from nbagent.protocol import ApprovalRequested
from nbagent.server.asks import approval_message
from tests.tools import test_patch_tool as patch_tests
from tests.tools.test_patch_tool import APP, PATCH, model, run

home, script, work = patch_tests.home, patch_tests.script, patch_tests.work  # the fixtures

DIFF = ["  M app.py +1 −1", "  --- app.py", "  +++ app.py", "  @@ -1,2 +1,2 @@", "   def total(items):",
        "  -    return 0", "  +    return sum(items)"]


async def test_the_approval_of_a_patch_carries_each_files_diff_and_every_front_end_shows_it(
    work: Path, script: Callable[..., str]
) -> None:
    seen, _ = await run(work, model(script), "deny")
    [ask] = [e.msg for e in seen if isinstance(e.msg, ApprovalRequested)]
    assert [(c.kind, c.path) for c in ask.changes] == [("add", "notes/todo.md"), ("update", "app.py")]
    assert "-    return 0\n+    return sum(items)\n" in ask.changes[1].unified_diff
    text = "\n".join(DIFF)
    assert text in approval_message(ask)  # an MCP caller's elicitation
    turn = TurnModel()
    assert any(text in _text(turn.apply(e)) for e in seen)  # nbagent run
    printed: list[str] = []
    view = TextTurn(lambda op: None, out=printed.append, model_label="replay", scripted=True, thread="t", policy="on-request")
    for event in seen:
        view.handle(event)
    assert text in "".join(printed)  # the terminal's %%agent
    assert (work / "app.py").read_text() == APP


async def test_the_diff_shows_the_file_as_it_is_now(work: Path, script: Callable[..., str]) -> None:
    (work / "app.py").write_text("def total(items):\n    return 0\n# added since\n")
    seen, _ = await run(work, model(script), "deny")
    [ask] = [e.msg for e in seen if isinstance(e.msg, ApprovalRequested)]
    assert "@@ -1,3 +1,3 @@" in ask.changes[1].unified_diff and " # added since" in ask.changes[1].unified_diff


async def test_a_patch_that_would_not_apply_is_asked_without_a_diff_and_a_warning_says_why(
    work: Path, script: Callable[..., str]
) -> None:
    seen, _ = await run(work, model(script, PATCH.replace("-    return 0", "-    return 1")), "deny")
    [ask] = [e.msg for e in seen if isinstance(e.msg, ApprovalRequested)]
    assert ask.changes == []
    [warning] = [e.msg.message for e in seen if e.msg.type == "warning"]  # type: ignore[union-attr]
    assert warning.startswith("what Apply a patch to files would change cannot be shown: the patch does not apply: ")
    assert "Failed to find expected lines in app.py: hunk 1" in warning
