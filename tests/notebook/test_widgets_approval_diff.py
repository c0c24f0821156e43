"""The approval panel of a change in-process: the diff is shown above the arguments, an edit of
the arguments is diffed again by the tool's own source (the latest edit wins), a change that
cannot be read says why, a patch fixed in the panel shows its diff, a tool that changes nothing
shows none, and the diff goes with the panel once decided."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from nbagent.notebook.approval import ApprovalPanel
from nbagent.protocol import ApprovalRequested, PatchChange
from nbagent.tools.patch import PatchTools
from tests.waiting import until

PATCH = "*** Begin Patch\n*** Update File: app.py\n@@\n-    return 0\n+    return {}\n*** End Patch"


async def test_an_edit_of_a_patch_is_diffed_again_against_the_file(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("def total(items):\n    return 0\n")
    tools = PatchTools(tmp_path)
    [spec] = tools.list_tools()
    arguments = {"input": PATCH.format("sum(items)")}
    asked: list[dict[str, Any]] = []

    async def preview(tool: str, args: dict[str, Any]) -> list[PatchChange]:
        asked.append(args)
        return await tools.preview(spec, args) if tool == "apply_patch" else []

    event = ApprovalRequested(call_id="c", tool="apply_patch", arguments=arguments, changes=await tools.preview(spec, arguments))
    panel = ApprovalPanel(event, lambda op: None, preview)
    assert panel.diff.layout.display == "" and "+    return sum(items)" in panel.diff.value
    assert panel.body.children.index(panel.diff) < panel.body.children.index(panel.arguments)
    for total in ("max(items)", "len(items)"):  # typed one after the other: the last one shows
        panel.arguments.value = json.dumps({"input": PATCH.format(total)})
    await until(lambda: "+    return len(items)" in panel.diff.value, "the last edit's diff")
    assert "sum(items)" not in panel.diff.value and "-    return 0" in panel.diff.value
    assert asked[-1] == {"input": PATCH.format("len(items)")} and len(asked) <= 2

    panel.arguments.value = json.dumps({"input": PATCH.replace("return 0", "return 7").format("x")})
    await until(lambda: "cannot be shown" in panel.diff.value, "why the edited patch has no diff")
    assert "the patch does not apply: Failed to find expected lines in app.py" in panel.diff.value
    panel.buttons["deny"].click()
    assert panel.body.layout.display == "none"


async def test_a_call_that_changes_nothing_shows_no_diff_even_once_edited() -> None:
    calls: list[dict[str, Any]] = []

    async def preview(tool: str, args: dict[str, Any]) -> list[PatchChange]:
        calls.append(args)
        return []

    panel = ApprovalPanel(ApprovalRequested(call_id="c", tool="mcp__s__t", arguments={"a": 1}), lambda op: None, preview)
    assert panel.diff.layout.display == "none"
    panel.arguments.value = '{"a": 2}'
    await until(lambda: calls == [{"a": 2}], "the edit's reading")
    assert panel.diff.layout.display == "none" and panel.diff.value == ""


async def test_a_patch_that_did_not_apply_shows_its_diff_once_edited_to_apply(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("def total(items):\n    return 0\n")
    tools = PatchTools(tmp_path)
    [spec] = tools.list_tools()
    broken = {"input": PATCH.replace("return 0", "return 1").format("x")}
    panel = ApprovalPanel(ApprovalRequested(call_id="c", tool="apply_patch", arguments=broken), lambda op: None,
                          lambda tool, args: tools.preview(spec, args))
    assert panel.diff.layout.display == "none"  # asked without a diff: a warning said why
    panel.arguments.value = json.dumps({"input": PATCH.format("sum(items)")})
    await until(lambda: "+    return sum(items)" in panel.diff.value, "the fixed patch's diff")
    assert panel.diff.layout.display == ""
