"""Untrusted text made safe to show (DESIGN §13): every front end uses these, none rolls its own.

Names, descriptions, arguments, outputs and questions come from servers and models. Shown
as-is, a bidi override reorders what the user reads, a zero-width character hides words, and
an escape sequence clears a terminal, retitles its window or writes the clipboard (OSC 52).
"""

from __future__ import annotations

import io
import ipaddress
import json
import re
import unicodedata
from dataclasses import dataclass
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


def folded(text: str, limit: int | None = None) -> str:
    """Untrusted prose (a message, a description) as one line of words: hidden characters shown,
    each run of whitespace one space, and past ``limit`` characters cut with ``…``. Unlike
    ``one_line`` it does not show where a newline was: for words, not for a name read exactly."""
    flat = " ".join(describe_for_display(text if limit is None else text[: limit * 2]).split())
    return flat if limit is None or len(flat) <= limit else flat[: limit - 1] + "…"


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


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a URL's hostname, no brackets) is this machine: ``localhost`` or a
    loopback address. Plain http is safe only there (RFC 8252 §8.3, OAuth 2.1 §1.5)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")
"""A last label a browser reads as a number, making the host an IPv4 address (``127.1``, ``0x7f.1``)."""
_ONE_SCRIPT = {"HIRAGANA": "CJK", "KATAKANA": "CJK"}
"""Scripts written together in one name (Japanese), so mixing them is no warning."""


@dataclass(frozen=True)
class LinkCheck:
    """What a person should see of a link before opening it: the host it really goes to, and why
    it may not be the site it reads as (the MCP spec: show the target domain, warn on suspicious URLs)."""

    host: str
    """The host the browser will contact, in ASCII (an internationalised name in its punycode)."""
    warnings: tuple[str, ...]


def _script(ch: str) -> str:
    name = unicodedata.name(ch, "")
    script = name.split(" ", 1)[0] if name else "UNKNOWN"
    return _ONE_SCRIPT.get(script, script)


def _unicode_host(host: str) -> str | None:
    """The host as its letters read, or ``None`` when its punycode does not decode."""
    try:
        return ".".join(label.encode("ascii").decode("idna") if label.startswith("xn--") else label
                        for label in host.split("."))
    except (UnicodeError, ValueError):
        return None


def check_link(url: str) -> LinkCheck:
    """The host of ``url`` (a link per :func:`is_link_url`) and its warnings: a user name before
    ``@`` (``https://github.com@evil.example/`` goes to evil.example), an IP address for a name,
    punycode or non-ASCII letters, letters of two scripts in one label."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    warnings: list[str] = []
    if "@" in parts.netloc:
        user = parts.netloc.rsplit("@", 1)[0]
        warnings.append(f"the link opens {host}: {one_line(user)!r} before the @ is only a user name sent to it, not the site")
    try:
        ascii_host = host.encode("idna").decode("ascii") if not host.isascii() else host
    except UnicodeError:
        ascii_host = host
        warnings.append("the host is not a valid internationalised name")
    labels = ascii_host.split(".")
    try:
        ipaddress.ip_address(host)
        numeric = True
    except ValueError:
        numeric = bool(_NUMERIC_LABEL.match(labels[-1] or (labels[-2] if len(labels) > 1 else "")))
    if numeric:
        warnings.append(f"the host is a bare IP address ({host}), not a name that says whose site it is")
    elif any(label.startswith("xn--") for label in labels):
        readable = _unicode_host(ascii_host)
        if readable is None:
            warnings.append(f"the host {ascii_host} is punycode (xn--) that does not decode")
        else:
            warnings.append(f"the host reads as {describe_for_display(readable)} but is {ascii_host} (punycode): "
                            "letters of another alphabet can imitate a familiar name")
            for label in readable.split("."):
                scripts = sorted({_script(ch) for ch in label if ch.isalpha()})
                if len(scripts) > 1:
                    named = " and ".join(s.title() for s in scripts)
                    warnings.append(f"{describe_for_display(label)!r} mixes {named} letters, as a look-alike name does")
    return LinkCheck(host=ascii_host, warnings=tuple(warnings))


def link_notes(url: str) -> list[str]:
    """:func:`check_link` as lines of text: where the link goes, then each warning."""
    if not is_link_url(url):
        return []
    checked = check_link(url)
    return [f"it opens {checked.host}", *(f"⚠ {w}" for w in checked.warnings)]
