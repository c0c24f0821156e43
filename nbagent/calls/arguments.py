"""Arguments a tool call can send on as the JSON they stand for, checked before any approval
(DESIGN §13): the same rule for a server's tool and a notebook function."""

from __future__ import annotations

import math
from typing import Any

from nbagent.schema.subset import ok_str

MAX_ARGUMENT_DEPTH = 64
"""Arguments nested deeper than this are refused. Every event, approval panel and record that
holds them is serialized by pydantic, which gives up past 255 levels (and reads JSON back no
deeper than 201) with the arguments several levels inside its envelope; no real tool needs 64."""

TOO_DEEP = f"the arguments are nested deeper than {MAX_ARGUMENT_DEPTH} levels"


def unsendable(arguments: dict[str, Any], limit: int = MAX_ARGUMENT_DEPTH) -> str | None:
    """Why ``arguments`` cannot be sent on as the JSON they stand for, naming where in them;
    ``None`` when they can. Three things Python's ``json`` reads but nothing after it can carry:
    nesting past ``limit`` (``TOO_DEEP``); a lone surrogate (``"\\ud800"``), which is not Unicode
    text, so no event, record or request holding it can be encoded; and NaN or Infinity, which
    JSON has no number for, so a server would be sent ``null`` for what the person approved.
    Walked with a stack, not recursion: they may nest deeper than Python's recursion limit."""
    stack: list[tuple[dict[Any, Any] | list[Any], tuple[object, ...]]] = [(arguments, ())]
    while stack:
        item, path = stack.pop()
        if len(path) >= limit:  # a container ``limit`` levels down holds a level more
            return TOO_DEEP
        for key, child in item.items() if isinstance(item, dict) else enumerate(item):
            if isinstance(key, str) and not ok_str(key):
                return f"a name in {_where(path)} {_not_text(key)}"
            if isinstance(child, (dict, list)):
                stack.append((child, (*path, key)))
            elif isinstance(child, str) and not ok_str(child):
                return f"{_where((*path, key))} {_not_text(child)}"
            elif isinstance(child, float) and not math.isfinite(child):
                spelled = "NaN" if math.isnan(child) else "Infinity" if child > 0 else "-Infinity"
                return f"{_where((*path, key))} is {spelled}, which JSON has no number for"
    return None


def _where(path: tuple[object, ...]) -> str:
    return f"the argument {'/'.join(map(str, path))}" if path else "the arguments"


def _not_text(text: str) -> str:
    """Why ``text`` is refused, with its first lone surrogate as an escape (the character itself
    cannot be shown or sent)."""
    lone = next(ch for ch in text if "\ud800" <= ch <= "\udfff")
    return f"holds a lone surrogate (\\u{ord(lone):04x}), which is not Unicode text"
