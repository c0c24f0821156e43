"""The changes an approval asks about, as coloured HTML for the approval panel: the lines of
``nbagent.kit.diffview``, each escaped, added lines green and removed ones red, a long diff's
rest behind a "… N more lines" the person opens. No script: the fold is a ``<details>``."""

from __future__ import annotations

from collections.abc import Sequence

from nbagent.kit.diffview import DiffLine, change_view, more_text
from nbagent.notebook.html import COLORS, esc, muted
from nbagent.protocol import PatchChange

_STYLE = {
    "add": "background:#e6ffec;color:#1a7f37",
    "remove": "background:#ffebe9;color:#cf222e",
    "hunk": f"color:{COLORS['info']}",
    "head": "font-weight:bold",
    "note": f"color:{COLORS['muted']}",
    "context": "",
}
_PRE = "margin:0;white-space:pre-wrap;font-size:0.85em;font-family:monospace"


def _lines(lines: Sequence[DiffLine]) -> str:
    # Each line is already inert text (controls shown): escaping makes it inert HTML too.
    return "".join(f"<div style='{_STYLE[line.kind]}'>{esc(line.text) or '&nbsp;'}</div>" for line in lines)


def changes_html(changes: Sequence[PatchChange]) -> str:
    """Every change: its head, its note, its diff coloured and folded."""
    parts = []
    for change in changes:
        view = change_view(change)
        note = f"<div style='color:{COLORS['warn']}'>{esc(view.note)}</div>" if view.note else ""
        rest = (
            f"<details><summary>{muted(more_text(len(view.folded)))}</summary>"
            f"<div style='{_PRE}'>{_lines(view.folded)}</div></details>"
            if view.folded
            else ""
        )
        parts.append(
            f"<div style='margin:2px 0'><div><code>{esc(view.head)}</code></div>{note}"
            f"<div style='{_PRE};max-height:30em;overflow:auto'>{_lines(view.shown)}{rest}</div></div>"
        )
    return "".join(parts)
