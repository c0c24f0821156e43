"""Small HTML helpers shared by the widgets: escaping, badges, pretty JSON.

Everything that came from a model or a server is escaped here; no widget builds HTML from
untrusted text any other way.
"""

from __future__ import annotations

import html
import json
from typing import Any

COLORS = {
    "ok": "#1a7f37",
    "error": "#cf222e",
    "warn": "#9a6700",
    "muted": "#6e7781",
    "info": "#0969da",
}


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def badge(text: str, color: str = "muted") -> str:
    fg = COLORS.get(color, color)
    return (
        f'<span style="border:1px solid {fg};color:{fg};border-radius:8px;padding:0 6px;'
        f'margin-right:4px;font-size:0.85em;white-space:nowrap">{esc(text)}</span>'
    )


def pretty_json(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def pre(text: str, max_height: str = "16em") -> str:
    return (
        f'<pre style="margin:2px 0;max-height:{max_height};overflow:auto;white-space:pre-wrap;'
        f'font-size:0.85em">{esc(text)}</pre>'
    )


def muted(text: str) -> str:
    return f'<span style="color:{COLORS["muted"]}">{esc(text)}</span>'


def link(url: str, label: str | None = None) -> str:
    """A link the user opens; never followed by the kernel or the page."""
    return f'<a href="{esc(url)}" target="_blank" rel="noopener noreferrer">{esc(label or url)}</a>'


def markdown_output(text: str, mime: str = "text/markdown") -> dict[str, Any]:
    """One ``display_data`` entry for an ``Output`` widget's ``outputs`` trait."""
    return {"output_type": "display_data", "data": {mime: text, "text/plain": text}, "metadata": {}}
