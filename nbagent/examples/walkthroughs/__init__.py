"""The teaching walkthroughs: one executed notebook per mechanism of the MCP runtime.

Each ``wNN_slug.py`` module here defines one notebook as a ``WALKTHROUGH`` (its cells as code, see
``nbagent.examples.cells``); ``notebooks/NN-slug.ipynb`` is written from it by
``python -m nbagent.examples.walkthroughs write``. Every walkthrough runs offline (the replay
model and real MCP servers from ``nbagent.examples``), names where its mechanism lives in Codex
(one of ``SEED_FILES``, or for the sandbox ``SANDBOX_FILES``) and in nbagent (module paths, checked to exist), and ends with an
exercise: a cell holding ``answer = ...`` whose next cell checks the answer against the runtime.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from pathlib import Path

import nbformat

from nbagent.examples.cells import CellKind, build_notebook

SEED_FILES = (
    "codex-rs/codex-mcp/src/connection_manager.rs",
    "codex-rs/codex-mcp/src/tools.rs",
    "codex-rs/codex-mcp/src/runtime.rs",
    "codex-rs/core/src/tools/handlers/mcp.rs",
    "codex-rs/core/src/mcp_tool_call.rs",
    "codex-rs/core/src/session/mcp.rs",
    "codex-rs/mcp-server/src/codex_tool_runner.rs",
    "codex-rs/mcp-server/src/message_processor.rs",
)
"""The Codex source files the lesson these walkthroughs teach ("Codex 101 | 07 | MCP Runtime")
anchors its mechanisms in; a walkthrough names only these when it says where a thing lives in
Codex."""

SANDBOX_FILES = ("codex-rs/protocol/src/protocol.rs",)
"""The Codex file beyond ``SEED_FILES`` the sandbox walkthrough names: the lesson's files pass
the sandbox along to a server, this one defines its policies."""

REVIEW_FILES = (
    "codex-rs/git-utils/src/ghost_commits.rs",
    "codex-rs/core/src/tasks/ghost_snapshot.rs",
    "codex-rs/core/src/tasks/undo.rs",
    "codex-rs/apply-patch/src/parser.rs",
)
"""The Codex files beyond ``SEED_FILES`` the review-and-undo walkthrough names: the patch format, the
per-turn ghost commit and the undo that restores it."""

WHO_ANSWERS: list[tuple[CellKind, str]] = [
    ("markdown", """**Who answers the approval panels:** this notebook's own autopilot, as its cells below
spell out, so a run ends the same in JupyterLab, Notebook 7, `jupyter nbconvert --execute`,
papermill or CI. To click each panel yourself, set `AUTOPILOT = False` and run the notebook in
JupyterLab or Notebook 7 (papermill: `-p AUTOPILOT False`). Run with no notebook UI and the
autopilot off, nobody can answer: each call that needs approval is declined at once, under the
notebook's own policy, and the check cells stop the run where the story then differs."""),
    ("code", "AUTOPILOT = True   # True: this notebook answers its own panels; False: you click them"),
]
"""Put before a walkthrough's first code cell: the one switch that says who answers, read by
``kit.autopilot(..., on=AUTOPILOT)`` (tagged ``parameters`` for papermill)."""

PLACEHOLDER = "answer = ..."
"""The line of an exercise cell the reader replaces with an answer."""


@dataclass(frozen=True)
class Walkthrough:
    """One notebook: its cells, and the exercise's intended and wrong answers (each a line that
    replaces ``PLACEHOLDER`` in the exercise cell; the cell after it checks)."""

    name: str
    """``NN-slug``: the notebook's file name without ``.ipynb``."""
    title: str
    cells: list[tuple[CellKind, str]]
    answer: str
    wrong_answer: str
    timeout: int = 120
    """Seconds any one cell may run."""
    files: tuple[str, ...] = ()
    """Files beside this module the notebook reads (replay scripts): they must ship with it."""

    def notebook_cells(self) -> list[tuple[CellKind, str]]:
        """``cells`` with ``WHO_ANSWERS`` before the first code cell: the notebook's cells."""
        first = next(index for index, (kind, _) in enumerate(self.cells) if kind == "code")
        return [*self.cells[:first], *WHO_ANSWERS, *self.cells[first:]]

    def build(self) -> nbformat.NotebookNode:
        nb = build_notebook(self.notebook_cells(), self.name)
        nb.metadata["nbagent"] = {"walkthrough": self.name, "title": self.title}
        switch = next(cell for cell in nb.cells if cell.source == WHO_ANSWERS[1][1])
        switch.metadata["tags"] = ["parameters"]
        return nb

    def exercise_index(self) -> int:
        """The index of the exercise cell in the notebook (the code cell holding ``PLACEHOLDER``)."""
        for index, (kind, source) in enumerate(self.notebook_cells()):
            if kind == "code" and PLACEHOLDER in source.splitlines():
                return index
        raise ValueError(f"walkthrough {self.name}: no code cell has the line {PLACEHOLDER!r}")


def all_walkthroughs() -> list[Walkthrough]:
    """Every ``wNN_*`` module's ``WALKTHROUGH``, in number order."""
    found = [
        importlib.import_module(f"{__name__}.{info.name}").WALKTHROUGH
        for info in pkgutil.iter_modules(__path__)
        if info.name[:1] == "w" and info.name[1:3].isdigit()
    ]
    return sorted(found, key=lambda w: w.name)


def get(name: str) -> Walkthrough:
    """The walkthrough called ``name`` (``04-approval``) or numbered ``name`` (``04``)."""
    for walkthrough in all_walkthroughs():
        if name in (walkthrough.name, walkthrough.name[:2]):
            return walkthrough
    raise KeyError(f"no walkthrough {name!r} (there are: {', '.join(w.name for w in all_walkthroughs())})")


def write(notebooks_dir: str | Path) -> list[Path]:
    """Write every walkthrough as ``notebooks_dir/NN-slug.ipynb``; return the paths."""
    out = Path(notebooks_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for walkthrough in all_walkthroughs():
        path = out / f"{walkthrough.name}.ipynb"
        nbformat.write(walkthrough.build(), str(path))
        paths.append(path)
    return paths
