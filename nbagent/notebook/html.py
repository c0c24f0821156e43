"""Small HTML helpers shared by the widgets: escaping, badges, pretty JSON.

Everything that came from a model or a server is escaped here; no widget builds HTML from
untrusted text any other way.
"""

from __future__ import annotations

import functools
import html
import json
import re
from typing import Any

from nbagent.textsafe import describe_for_display, is_link_url

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
    """A block of untrusted text (a server's stderr, a result, an error): escaped for HTML, and
    its controls and bidi overrides shown as ``<U+XXXX>``, since a browser would apply them."""
    return (
        f'<pre style="margin:2px 0;max-height:{max_height};overflow:auto;white-space:pre-wrap;'
        f'font-size:0.85em">{esc(describe_for_display(text))}</pre>'
    )


def muted(text: str) -> str:
    return f'<span style="color:{COLORS["muted"]}">{esc(text)}</span>'


def link(url: str, label: str | None = None) -> str:
    """A link the user opens; never followed by the kernel or the page. Only ``https``/``http``
    URLs become links (``javascript:`` would run in the page); anything else is shown as text."""
    if not is_link_url(url):
        return f"<code>{esc(url)}</code>"
    return f'<a href="{esc(url)}" target="_blank" rel="noopener noreferrer">{esc(label or url)}</a>'


def markdown_output(text: str, mime: str = "text/markdown") -> dict[str, Any]:
    """One ``display_data`` entry for an ``Output`` widget's ``outputs`` trait."""
    shown = safe_markdown(text) if mime == "text/markdown" else text
    return {"output_type": "display_data", "data": {mime: shown, "text/plain": text}, "metadata": {}}


# -- the model's Markdown -------------------------------------------------------------------------
# Not every renderer sanitises Markdown output (JupyterLab does; exported HTML and other front
# ends may not), so raw HTML in what the model writes is shown as text, and links go only to
# web, mail or relative addresses. An image would be fetched the moment the text is drawn, its
# URL carrying whatever a prompt injection put in it, so each image becomes a link to open
# instead. Formatting, code spans and fenced code are kept as written.

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_TICKS = re.compile(r"`+")
_INLINE_DEST = re.compile(r"\]\(\s*([^\s)]*)")
_REF_DEF = re.compile(r"^ {0,3}\[(?:[^\]\\]|\\.)+\]:\s*(\S+)")
_SAFE_SCHEMES = ("http://", "https://", "mailto:")


def _unsafe_destination(dest: str) -> bool:
    """A destination whose scheme part is not plainly web or mail. ``&`` and ``\\`` count:
    Markdown decodes ``&#58;`` and ``\\:`` to a colon, which would make ``javascript&#58;x`` a link."""
    dest = dest.removeprefix("&lt;")
    head = re.split(r"[/?#]", dest, maxsplit=1)[0]
    return any(c in head for c in ":&\\") and not dest.lower().startswith(_SAFE_SCHEMES)


IMAGE_MARK = "🖼 "
"""What stands before the link an image of the model's text becomes."""


def _safe_prose(text: str) -> str:
    # ``![`` opens every image form (inline, reference, inside a link); without the ``!`` it is a
    # link. An empty description would make an empty link no one can click.
    text = text.replace("<", "&lt;").replace("![]", f"{IMAGE_MARK}[image]").replace("![", f"{IMAGE_MARK}[")
    return _INLINE_DEST.sub(lambda m: "]\\" + m.group(0)[1:] if _unsafe_destination(m.group(1)) else m.group(0), text)


def _code_spans(line: str) -> list[tuple[int, int]]:
    """Where the code spans of ``line`` start and end: a backtick run up to the next run of the
    same length (no regex backtracking, so a line of backticks costs little)."""
    runs = [(m.start(), m.end() - m.start()) for m in _TICKS.finditer(line)]
    spans, i = [], 0
    while i < len(runs):
        start, size = runs[i]
        close = next((j for j in range(i + 1, len(runs)) if runs[j][1] == size), None)
        if close is None:
            i += 1
            continue
        spans.append((start, runs[close][0] + size))
        i = close + 1
    return spans


def _safe_line(line: str, keep_code: bool) -> str:
    ref = _REF_DEF.match(line.replace("<", "&lt;"))
    if ref and _unsafe_destination(ref.group(1)):
        line = "\\" + line.lstrip()
    out, at = [], 0
    for start, end in _code_spans(line) if keep_code else ():
        out += [_safe_prose(line[at:start]), line[start:end]]
        at = end
    out.append(_safe_prose(line[at:]))
    return "".join(out)


def _made_safe(text: str, keep_code: bool) -> str:
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        opened = _FENCE.match(line) if keep_code else None
        if fence is not None:
            out.append(line)
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) and not line.strip(" `~"):
                fence = None
        elif opened:
            fence = opened.group(1)
            out.append(line)
        else:
            out.append(_safe_line(line, keep_code))
    return "\n".join(out)


_MARKUP = re.compile(r"<[A-Za-z/!?]|!\[")
"""What may open a tag or an image: left in ``safe_markdown``'s output only where it kept code."""


@functools.cache
def _parser() -> Any:
    """CommonMark's blocks and what in a line decides code, images and raw HTML: the other rules
    (emphasis, links) change neither and would only slow each update of a streaming reply."""
    from markdown_it import MarkdownIt

    return MarkdownIt("zero", {"html": True}).enable(
        ["code", "fence", "blockquote", "hr", "list", "reference", "html_block", "heading", "lheading", "table",
         "newline", "escape", "entity", "backticks", "html_inline", "image"]
    )


def _draws_markup(markdown: str) -> bool:
    """Whether a CommonMark parser finds an image or raw HTML in ``markdown``.

    Which text is code is decided above line by line, which a parser may see otherwise (a
    backtick escaped, a code span over two lines, a fence ended by its list item); what was
    left as code must really be code, or an image or a tag in it would be drawn."""
    tokens = _parser().parse(markdown)
    while tokens:
        token = tokens.pop()
        if token.type in ("image", "html_inline", "html_block"):
            return True
        tokens.extend(token.children or ())
    return False


def safe_markdown(text: str) -> str:
    """``text`` with raw HTML tags escaped, images made links and unsafe link targets unlinked,
    outside code. Should a parser not see as code what was kept as code, nothing is kept."""
    if "<" not in text and "](" not in text and "]:" not in text and "![" not in text:
        return text
    shown = _made_safe(text, keep_code=True)
    if _MARKUP.search(shown) and _draws_markup(shown):
        return _made_safe(text, keep_code=False)
    return shown
