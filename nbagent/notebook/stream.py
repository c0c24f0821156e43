"""Streaming Markdown: one ``Output`` widget whose content is replaced, coalesced, as deltas arrive.

The ``outputs`` trait is set directly instead of printing into the widget, so updates reach the
right place from any task or callback (DESIGN §9: output routed by parent header gets lost).
"""

from __future__ import annotations

import ipywidgets as W

from nbagent.notebook.html import markdown_output
from nbagent.notebook.throttle import DEFAULT_INTERVAL, Coalescer


class MarkdownStream:
    def __init__(self, interval: float = DEFAULT_INTERVAL, mime: str = "text/markdown") -> None:
        self._parts: list[str] = []
        self._mime = mime
        self.widget = W.Output(layout=W.Layout(margin="0"))
        self._coalescer = Coalescer(self._push, interval)

    @property
    def updates(self) -> int:
        """How many display updates were actually sent."""
        return self._coalescer.flushes

    @property
    def text(self) -> str:
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def append(self, delta: str) -> None:
        self._parts.append(delta)  # joined only when pushed: 20,000 deltas stay linear
        self._coalescer.touch()

    def set(self, text: str) -> None:
        """Replace with the final text (the full message wins over the joined deltas)."""
        if text != self.text:
            self._parts = [text]
            self._coalescer.touch()
        self.flush()

    def flush(self) -> None:
        self._coalescer.flush()

    def _push(self) -> None:
        self.widget.outputs = (markdown_output(self.text, self._mime),) if self.text else ()
