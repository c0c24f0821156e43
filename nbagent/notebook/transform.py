"""Rewrite ``%%agent`` cells into a top-level ``await`` so ``--wait`` can block the cell.

A magic is a plain function: it cannot await. IPython's autoawait can: a cleanup transformer
turns the cell into ``await _nbagent_cell(line, body)``, which ipykernel runs as an async cell
on its event loop, where comm messages (widget clicks) are still dispatched (measured on
ipykernel 7.4; DESIGN §9). Without ``--wait`` the awaited function returns at once after
starting a background task, so both modes share one path.
"""

from __future__ import annotations

import re
from typing import Any

CELL_FUNCTION = "_nbagent_cell"
_HEAD = re.compile(r"^%%agent(?:\s|$)")


def rewrite(lines: list[str]) -> list[str]:
    """Cleanup transformer: only cells whose first line is ``%%agent`` are touched."""
    if not lines or not _HEAD.match(lines[0]):
        return lines
    line = lines[0][len("%%agent") :].strip()
    body = "".join(lines[1:])
    return [f"await {CELL_FUNCTION}({line!r}, {body!r})\n"]


# IPython's ``check_complete`` (the terminal's "is this cell finished?" on Enter, the kernel's
# ``is_complete_request``) skips transformers marked so: a ``%%agent`` line alone stays
# incomplete until its body and a blank line follow, instead of running with an empty goal.
rewrite.has_side_effects = True  # type: ignore[attr-defined]  # IPython reads this mark off the function


def install(shell: Any, cell_function: Any) -> None:
    if not getattr(shell, "autoawait", False):
        return  # %autoawait off: the plain magic runs, in the background
    shell.user_ns[CELL_FUNCTION] = cell_function
    getattr(shell, "user_ns_hidden", {})[CELL_FUNCTION] = cell_function
    transformers = shell.input_transformers_cleanup
    if rewrite not in transformers:
        transformers.append(rewrite)


def uninstall(shell: Any) -> None:
    transformers = getattr(shell, "input_transformers_cleanup", [])
    while rewrite in transformers:
        transformers.remove(rewrite)
    shell.user_ns.pop(CELL_FUNCTION, None)
    getattr(shell, "user_ns_hidden", {}).pop(CELL_FUNCTION, None)
