"""``apply_patch``: Codex's file-editing tool, in its function form (one argument, ``input``,
holding the whole patch), over :mod:`nbagent.patch`.

It writes only inside the workspace and the sandbox's other writable roots (never ``.git``,
never a folder the sandbox hides), all files or none. It is not read-only, so every call goes
through approval like any tool that changes things. Around the write it emits Codex's
``patch_apply_begin`` (every file's change, before any is written) and ``patch_apply_end``; the
call's output keeps the same changes, so the rollout records what each file became.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nbagent.calls.events import emit
from nbagent.core.function_tools import own_tool_spec
from nbagent.core.provider import ToolProvider
from nbagent.patch import FileChange, PatchError, plan_patch
from nbagent.protocol import (
    CallInfo,
    PatchApplyBegin,
    PatchApplyEnd,
    PatchChange,
    TextBlock,
    ToolAnnotations,
    ToolResult,
    ToolSpec,
)
from nbagent.protocol.tools import ProgressFn
from nbagent.sandbox import SandboxPolicy

NAME = "apply_patch"

_DESCRIPTION = """\
Edit files by sending a patch in `input`. The patch is plain text framed by two lines:

*** Begin Patch
(one or more file operations)
*** End Patch

Each file operation starts with one header line:
*** Add File: PATH      a new file; every line after it is a line of the file, prefixed with +
*** Delete File: PATH   removes an existing file; nothing follows it
*** Update File: PATH   changes an existing file; it may be followed by *** Move to: NEW_PATH to
                        rename it, then come one or more hunks

A hunk starts with a line @@, optionally followed by a line of the file the change comes after
(such as `@@ class Report` or `@@ def total(self):`), which places hunks that would otherwise be
ambiguous. Then come the file's lines, each prefixed with one character: a space for a line kept
as it is, - for a line removed, + for a line added. Show 3 unchanged lines before and after each
change (fewer at the start or end of the file); when they do not place the change uniquely, add
@@ lines naming the enclosing class or function. Put *** End of File after a hunk whose lines
end the file. Hunks of one file come in the order of the file.

Paths are relative to the workspace; absolute paths are refused, and so is anything in .git.
All files are written or none is: if a hunk's lines are not in the file the call fails, naming
the file and the hunk, and nothing changes; read the file again and send a corrected patch.

Example:
*** Begin Patch
*** Add File: notes/todo.md
+# To do
+- write the tests
*** Update File: src/report.py
@@ def total(self):
     items = self.items
-    return sum(items)
+    return sum(item.amount for item in items)
*** Delete File: src/old_report.py
*** End Patch"""

_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "input": {"type": "string", "description": "The entire patch, from *** Begin Patch to *** End Patch."}
    },
    "required": ["input"],
    "additionalProperties": False,
}


class PatchTools(ToolProvider):
    """A ``ToolProvider`` with one tool, ``apply_patch``.

    Args:
        workspace: the folder patch paths are relative to (the session's cwd).
        roots: the folders it may write; the workspace alone when empty.
        denied: folders it never writes, even inside a root.
    """

    generation = 0
    """The list never changes."""

    def __init__(
        self, workspace: str | Path, roots: Sequence[str | Path] = (), denied: Sequence[str | Path] = ()
    ) -> None:
        self.workspace = str(Path(workspace).resolve())
        self.roots = tuple(str(r) for r in roots) or (self.workspace,)
        self.denied = tuple(str(d) for d in denied)
        self._spec = own_tool_spec(
            NAME,
            _DESCRIPTION,
            _PARAMETERS,
            source="native",
            title="Apply a patch to files",
            annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False),
        )

    @classmethod
    def within(cls, policy: SandboxPolicy) -> PatchTools:
        """The tool for ``policy``'s workspace, writing where the policy lets a process write (the
        workspace, whatever the mode, then its other writable roots) and never what it hides."""
        return cls(policy.workspace, tuple(dict.fromkeys((policy.workspace, *policy.writable_roots))), policy.deny_read)

    def list_tools(self) -> Sequence[ToolSpec]:
        return [self._spec]

    async def call_tool(
        self, spec: ToolSpec, arguments: dict[str, Any], call: CallInfo, on_progress: ProgressFn | None = None
    ) -> ToolResult:
        text = arguments.get("input")
        if spec.name != NAME:
            return ToolResult.error(f"unknown tool {spec.name!r}")
        if not isinstance(text, str):
            return ToolResult.error("apply_patch needs a string argument 'input' holding the whole patch")
        unknown = sorted(set(arguments) - {"input"})
        if unknown:
            return ToolResult.error(f"apply_patch: unknown argument(s) {', '.join(unknown)}")
        try:
            plan = await asyncio.to_thread(plan_patch, text, self.workspace, self.roots, denied=self.denied)
        except PatchError as exc:
            return ToolResult.error(str(exc))
        changes = [_event_change(c) for c in plan.changes]
        emit(PatchApplyBegin(call_id=call.call_id, changes=changes))
        try:
            await asyncio.to_thread(plan.commit)
        except PatchError as exc:
            emit(PatchApplyEnd(call_id=call.call_id, success=False, stderr=str(exc), changes=changes))
            return ToolResult.error(str(exc))
        summary = plan.summary()
        emit(PatchApplyEnd(call_id=call.call_id, success=True, stdout=summary, changes=changes))
        structured = {"changes": [c.model_dump(mode="json") for c in changes]}
        return ToolResult(content=[TextBlock(text=summary)], structured=structured)


    async def preview(self, spec: ToolSpec, arguments: dict[str, Any]) -> list[PatchChange]:
        """Every file's change, planned against the files as they are now, nothing written; a
        patch that would not apply says why (the call would fail the same way)."""
        text = arguments.get("input")
        if spec.name != NAME or not isinstance(text, str):
            return []
        try:
            plan = await asyncio.to_thread(plan_patch, text, self.workspace, self.roots, denied=self.denied)
        except PatchError as exc:
            raise ValueError(f"the patch does not apply: {exc}") from None
        return [_event_change(c) for c in plan.changes]


def _event_change(change: FileChange) -> PatchChange:
    return PatchChange(
        kind=change.kind, path=change.path, move_path=change.move_path, unified_diff=change.diff,
        old_hash=change.old_hash, new_hash=change.new_hash,
    )  # fmt: skip
