"""Untrusted text made safe to show (DESIGN §13): every front end uses these, none rolls its own.

Names, descriptions, arguments, outputs and questions come from servers and models. Shown
as-is, a bidi override reorders what the user reads, a zero-width character hides words, and
an escape sequence clears a terminal, retitles its window or writes the clipboard (OSC 52).
"""

from __future__ import annotations

import io
import json
import unicodedata
from typing import Any, TextIO
from urllib.parse import urlsplit

_INVISIBLE_EXTRA = {
    0x115F,
    0x1160,
    0x3164,
    0xFFA0,  # Hangul fillers render as nothing
    0x034F,  # combining grapheme joiner
    0x2800,  # braille blank
}


def _is_invisible(ch: str) -> bool:
    if ch in "\n\t":
        return False
    cp = ord(ch)
    if cp in _INVISIBLE_EXTRA or 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF:  # variation selectors
        return True
    return unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def describe_for_display(text: str) -> str:
    """``text`` with invisible, zero-width, bidi and control characters shown as ``<U+XXXX>``.

    Newlines and tabs stay. ESC (U+001B) and CR are controls, so an ANSI/OSC sequence loses
    its introducer and prints as inert text: ``<U+001B>]52;c;...``.
    """
    if text.isascii() and text.isprintable():
        return text
    return "".join(f"<U+{ord(ch):04X}>" if _is_invisible(ch) else ch for ch in text)


def one_line(text: str) -> str:
    """Untrusted text (a thread's name, a server's words) as one inert line: hidden characters
    shown, a newline as ``\\n``, so it cannot start a line that reads as nbagent's."""
    return describe_for_display(text).replace("\n", "\\n")


def visible_json(value: Any) -> str:
    """Indented JSON of ``value`` with every invisible character written as a ``\\uXXXX`` escape.

    Outside strings JSON holds only plain whitespace, so the escapes land inside strings: the
    text still parses to exactly ``value``, yet shows a bidi override instead of obeying it.
    """
    try:
        text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return describe_for_display(repr(value))
    if text.isascii() and text.isprintable():
        return text
    return "".join(json.dumps(ch)[1:-1] if _is_invisible(ch) else ch for ch in text)


class VisibleWriter(io.TextIOBase):
    """A text stream that shows controls and invisible characters instead of writing them."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._stream.write(describe_for_display(text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()


LINK_SCHEMES = ("https", "http")


def is_link_url(url: str | None) -> bool:
    """Whether ``url`` may be shown as a link: ``https``/``http`` with a host, nothing hidden in it."""
    if not url or any(_is_invisible(ch) or ch.isspace() for ch in url):
        return False
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in LINK_SCHEMES and bool(parts.netloc)
