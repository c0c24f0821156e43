"""Project instructions: ``AGENTS.md`` files, found the way Codex finds them.

One global file (``$NBAGENT_HOME/AGENTS.override.md``, else ``AGENTS.md``), then one file per
directory from the project root (the nearest ancestor holding one of ``project_root_markers``)
down to the working directory: ``AGENTS.override.md``, else ``AGENTS.md``, else the first
``project_doc_fallback_filenames`` that exists. Files nearer the working directory come later, so
they read as overrides. Empty files are skipped; the combined text stops at
``project_doc_max_bytes``.

A notebook folder may come from someone else, so a candidate is read only when it is a regular
file inside the project (a link out of it is skipped, and so is a FIFO that would block the
kernel), never more than the budget that is left, and without control characters.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

OVERRIDE_NAME = "AGENTS.override.md"
DEFAULT_NAME = "AGENTS.md"
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
"""C0 controls but tab and newlines: NULs and escapes are no instruction, only noise the model pays for."""


@dataclass(frozen=True)
class ProjectDoc:
    """One instruction file as the model will see it."""

    path: Path
    scope: str
    """``global`` (nbagent's home) or ``project``."""
    text: str
    size: int
    """Bytes on disk."""
    truncated: bool
    """The budget ran out inside this file: the model sees its first part only."""


@dataclass(frozen=True)
class Skipped:
    """A candidate that exists but was not read, and why (shown in ``%agent`` status)."""

    path: Path
    reason: str


@dataclass(frozen=True)
class ProjectDocs:
    docs: tuple[ProjectDoc, ...]
    skipped: tuple[Skipped, ...]

    def text(self) -> str:
        return "\n\n".join(doc.text for doc in self.docs)

    def describe(self) -> list[str]:
        """One line per file, for a status display: which file, how much of it the model sees."""
        lines = []
        for doc in self.docs:
            used = len(doc.text.encode())
            cut = f", cut to {used:,} B by project_doc_max_bytes" if doc.truncated else ""
            lines.append(f"{doc.path} ({doc.scope}, {doc.size:,} B{cut})")
        lines.extend(f"{skip.path} skipped: {skip.reason}" for skip in self.skipped)
        return lines


def project_root(cwd: Path, markers: list[str]) -> Path | None:
    """The nearest ancestor of ``cwd`` (itself included) holding one of ``markers``."""
    for folder in (cwd, *cwd.parents):
        if any(os.path.lexists(folder / marker) for marker in markers):
            return folder
    return None


def find_project_docs(
    cwd: Path, home: Path, *, max_bytes: int, fallback_names: list[str], root_markers: list[str],
) -> ProjectDocs:
    """Every instruction file that applies in ``cwd``, global first, root to ``cwd`` after."""
    cwd = cwd.resolve()
    root = project_root(cwd, root_markers) or cwd
    folders = [cwd, *cwd.parents]
    chain = list(reversed(folders[: folders.index(root) + 1]))
    names = [OVERRIDE_NAME, DEFAULT_NAME, *fallback_names]
    docs: list[ProjectDoc] = []
    skipped: list[Skipped] = []
    left = max_bytes

    def take(folder: Path, scope: str, candidates: list[str], inside: Path) -> None:
        nonlocal left
        for name in candidates:
            path = folder / name
            if not os.path.lexists(path):
                continue
            problem = _unreadable(path, inside)
            if problem:
                skipped.append(Skipped(path, problem))
                continue
            size = path.stat().st_size
            if size == 0 or left <= 0:
                if size and left <= 0:
                    skipped.append(Skipped(path, f"over project_doc_max_bytes ({max_bytes})"))
                continue
            with path.open("rb") as fh:
                raw = fh.read(left)
            text = _CONTROL.sub("", raw.decode("utf-8", errors="ignore")).strip()
            if not text:
                continue
            docs.append(ProjectDoc(path=path, scope=scope, text=text, size=size, truncated=size > len(raw)))
            left -= len(raw)
            return

    take(home, "global", [OVERRIDE_NAME, DEFAULT_NAME], home.resolve() if home.exists() else home)
    for folder in chain:
        take(folder, "project", names, root)
    return ProjectDocs(tuple(docs), tuple(skipped))


def _unreadable(path: Path, inside: Path) -> str | None:
    """Why ``path`` must not be read, or None."""
    try:
        real = path.resolve(strict=True)
        mode = real.stat().st_mode
    except (OSError, RuntimeError) as exc:
        return f"cannot be read ({exc.__class__.__name__})"
    if not stat.S_ISREG(mode):
        return "not a regular file"
    if not real.is_relative_to(inside):
        return f"a link to {real}, outside {inside}"
    if not os.access(real, os.R_OK):
        return "not readable"
    return None
