"""The changes an approval asks about, as every front end draws them: each change's one-line
head, its note, then its unified diff line by line, a long one folded after ``FOLD_AT`` lines.

The widget colours the same lines (``nbagent.notebook.diffview``); the terminal and an MCP
caller read them as text. Lines come from a model's patch or a file: controls and invisible
characters are shown, never applied.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from nbagent.kit.turn import change_line
from nbagent.protocol import PatchChange
from nbagent.textsafe import describe_for_display, one_line

FOLD_AT = 40
"""Lines of one change's diff shown before the rest is folded."""

LineKind = Literal["head", "hunk", "add", "remove", "context", "note"]


@dataclass(frozen=True)
class DiffLine:
    kind: LineKind
    text: str
    """Inert: hidden characters shown as ``<U+XXXX>``."""


@dataclass(frozen=True)
class ChangeView:
    """One change as drawn: its head line, its note, and its diff's lines split at the fold."""

    head: str
    note: str
    shown: list[DiffLine]
    folded: list[DiffLine]


def diff_lines(diff: str) -> list[DiffLine]:
    """A unified diff's lines, each with what it is."""
    out = []
    for line in diff.splitlines():
        if line.startswith(("--- ", "+++ ")):
            kind: LineKind = "head"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "remove"
        elif line.startswith("\\"):
            kind = "note"
        else:
            kind = "context"
        out.append(DiffLine(kind, describe_for_display(line)))
    return out


def change_view(change: PatchChange, fold_at: int = FOLD_AT) -> ChangeView:
    lines = diff_lines(change.unified_diff)
    if not lines:
        lines = [DiffLine("note", "(no change to its content)")]
    return ChangeView(change_line(change), one_line(change.note), lines[:fold_at], lines[fold_at:])


def more_text(folded: int) -> str:
    return f"… {folded} more line{'s' if folded != 1 else ''}"


def changes_text(changes: Sequence[PatchChange], *, indent: str = "  ", fold_at: int = FOLD_AT) -> str:
    """The changes as plain text, a long diff cut after ``fold_at`` lines with how many follow."""
    out: list[str] = []
    for change in changes:
        view = change_view(change, fold_at)
        out.append(f"{indent}{view.head}" + (f" ({view.note})" if view.note else ""))
        out.extend(f"{indent}{line.text}" for line in view.shown)
        if view.folded:
            out.append(f"{indent}{more_text(len(view.folded))}")
    return "\n".join(out)
