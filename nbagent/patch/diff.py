"""The unified diff of one file's change, as every front end draws it (the call's card, the
terminal, an approval), and the fold that keeps a long one short."""

from __future__ import annotations

import difflib
from dataclasses import dataclass


def unified_diff(old: str, new: str, path: str, new_path: str | None = None, *, context: int = 3) -> str:
    """``old`` -> ``new`` with ``context`` unchanged lines around each change, headed ``--- PATH``
    and ``+++ NEW_PATH`` (an added or deleted file passes ``""`` as the side it lacks); ``""``
    when nothing changed. A last line without a newline is marked as ``git diff`` marks it."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=path,
        tofile=new_path or path,
        n=context,
    )
    out: list[str] = []
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        out.append(line)
    return "".join(out)


def line_counts(diff: str) -> tuple[int, int]:
    """``(added, removed)`` lines of a unified diff, its headers not counted."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++ "):
            added += 1
        elif line.startswith("-") and not line.startswith("--- "):
            removed += 1
    return added, removed


@dataclass(frozen=True)
class Folded:
    text: str
    """The diff with long runs of unchanged lines replaced by one marker line each."""
    folded: int
    """How many unchanged lines the markers stand for."""


def fold(diff: str, context: int = 3) -> Folded:
    """``diff`` keeping ``context`` unchanged lines on each side of every change; each longer run
    becomes ``⋯ N unchanged lines``. Headers (``---``, ``+++``, ``@@``) are always kept."""
    lines = diff.splitlines()
    keep = [_header(line) for line in lines]
    for i, line in enumerate(lines):
        if not _header(line) and line[:1] in ("+", "-", "\\"):
            for k in range(max(0, i - context), min(len(lines), i + context + 1)):
                keep[k] = True
    out: list[str] = []
    folded = run = 0
    for line, kept in [*zip(lines, keep, strict=True), ("", True)]:
        if kept and run:
            out.append(f"⋯ {run} unchanged line{'s' if run != 1 else ''}")
            folded, run = folded + run, 0
        if kept:
            out.append(line)
        else:
            run += 1
    return Folded("\n".join(out), folded)


def _header(line: str) -> bool:
    return line.startswith(("--- ", "+++ ", "@@"))
