"""Where a hunk's lines are in a file, found as Codex finds them (``seek_sequence.rs``): exactly,
then ignoring trailing whitespace, then ignoring whitespace at both ends, then with typographic
dashes, quotes and spaces read as their ASCII twins. The first pass that matches wins, at the
first place it matches from ``start`` on."""

from __future__ import annotations

from collections.abc import Callable, Sequence

_ASCII = str.maketrans(
    {
        **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
        **dict.fromkeys("\u2018\u2019\u201a\u201b", "'"),
        **dict.fromkeys("\u201c\u201d\u201e\u201f", '"'),
        **dict.fromkeys("\u00a0\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u202f\u205f\u3000", " "),
    }
)


def _ascii(line: str) -> str:
    return line.strip().translate(_ASCII)


def _same(line: str) -> str:
    return line


_PASSES: tuple[Callable[[str], str], ...] = (_same, str.rstrip, str.strip, _ascii)


def seek_sequence(lines: Sequence[str], pattern: Sequence[str], start: int, end_of_file: bool) -> int | None:
    """The index in ``lines`` where ``pattern`` starts, at or after ``start``; ``end_of_file``
    looks only where the pattern would end the file."""
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return None
    first = len(lines) - len(pattern) if end_of_file else start
    size = len(pattern)
    for same in _PASSES:
        seen = list(map(same, lines))  # each line made comparable once, then compared in C
        wanted = list(map(same, pattern))
        for i in range(first, len(lines) - size + 1):
            if seen[i] == wanted[0] and seen[i : i + size] == wanted:
                return i
    return None
