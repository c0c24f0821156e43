"""Codex's ``apply_patch`` as a library: its patch format (``parse``), its lenient way of finding
a hunk's lines (``seek``), an all-or-nothing apply confined to allowed folders (``apply``), and
the unified diff every front end draws of a change (``diff``). Pure: nothing of nbagent but this
package, so any tool (or a person's script) can use it."""

from nbagent.patch.apply import FileChange, PatchPlan, apply_patch, plan_patch
from nbagent.patch.diff import Folded, fold, line_counts, unified_diff
from nbagent.patch.parse import AddFile, Chunk, DeleteFile, Hunk, PatchError, UpdateFile, parse_patch

__all__ = [
    "AddFile",
    "Chunk",
    "DeleteFile",
    "FileChange",
    "Folded",
    "Hunk",
    "PatchError",
    "PatchPlan",
    "UpdateFile",
    "apply_patch",
    "fold",
    "line_counts",
    "parse_patch",
    "plan_patch",
    "unified_diff",
]
