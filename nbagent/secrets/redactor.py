"""The redactor: every occurrence of a secret in a text, a JSON value or a rollout line replaced
by ``[redacted]``, found by one scan.

The rollout writer, the events a session hands out, the inspect views, the wire view and what
the model provider is sent all redact with it, so every view hides the same values.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from typing import Any

from nbagent.secrets.names import secret_values

__all__ = ["REDACTED", "Redactor"]

REDACTED = "[redacted]"

_VOCABULARY = frozenset(
    {"type", "status", "entry", "policy", "decision", "by", "action", "id", "turn_id", "call_id", "request_id",
     "thread_id", "server", "tool", "raw_tool"}
)
"""Fields of nbagent's own protocol (literals, ids, tool and server names): never free text, so
never redacted; a secret that happens to equal ``completed`` or ``approve`` must not rewrite a
record's status or decision."""


class Redactor:
    """Replaces every occurrence of a secret in the free text of a line by ``[redacted]``.

    A line that holds no secret (nearly all) is found so by one scan of its bytes and written as
    it is. A line that does is redacted value by value: prompts, outputs, arguments, names,
    reasons, the keys and values of free data; never a field of the protocol's vocabulary. A
    secret may appear JSON-escaped once (a string of the line) or twice (inside a JSON string such
    as a call's ``arguments``), so every such form is searched.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = secret_values(secrets)
        self.secrets = frozenset(values)
        """What it hides: two redactors with the same set hide alike (a cache keys on it)."""
        forms: dict[str, str] = {}  # each form a secret may take in a line -> the secret
        for secret in values:
            for once in _escaped(secret):
                forms.update(dict.fromkeys(_escaped(once), secret))
        self._forms = forms
        ordered = sorted(forms, key=len, reverse=True)  # a secret containing another goes whole
        self._text = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._bytes = re.compile(b"|".join(re.escape(f.encode()) for f in ordered)) if ordered else None
        self._ordered = ordered

    def __bool__(self) -> bool:
        return self._text is not None

    def text(self, value: str) -> str:
        """Redact a plain string (for values that go elsewhere than the rollout)."""
        return self._text.sub(REDACTED, value) if self._text is not None else value

    def find(self, text: str) -> str | None:
        """The first secret that occurs in ``text`` (as it is or JSON-escaped), found by one scan;
        ``None`` when none does. For a check that refuses rather than hides."""
        match = self._text.search(text) if self._text is not None else None
        return self._forms[match.group()] if match is not None else None

    def release(self, text: str) -> tuple[str, str]:
        """``text`` streamed so far, cut where no secret can span: ``(the part before, redacted,
        to show now; the tail that may still begin a secret, to hold)``. The tail is the shortest
        one, at most the longest form minus one character, so text that begins no secret is
        shown at once; shown piece by piece, a stream reads as ``text()`` of its whole."""
        if self._text is None:
            return text, ""
        shown: list[str] = []
        start = 0
        while True:
            held = self._held_from(text, start)
            match = self._text.search(text, start)
            if match is None or match.start() >= held:
                shown.append(text[start:held])
                return "".join(shown), text[held:]
            # Before the held tail no later text can make a longer form match here: this one is
            # final, and redacted whole even where it runs into what would have been held.
            shown += (text[start : match.start()], REDACTED)
            start = match.end()

    def _held_from(self, text: str, start: int) -> int:
        """The start of the longest tail of ``text[start:]`` that is the beginning of a longer
        form (the next fragment may still complete it); ``len(text)`` when there is none."""
        starts = self._starts
        for i in range(max(start, len(text) - len(self._ordered[0]) + 1), len(text)):
            if text[i] in starts and text[i:] in starts:
                return i
        return len(text)

    @functools.cached_property
    def _starts(self) -> frozenset[str]:
        """Every proper prefix of every form: the ends a stream's text may have while a secret is
        still coming. Built on first use: only a stream needs it."""
        return frozenset(form[:n] for form in self._ordered for n in range(1, len(form)))

    def line(self, data: bytes) -> bytes:
        """Return ``data`` with every secret in free text replaced; ``data`` itself when none occurs."""
        if self._bytes is None or not self._bytes.search(data):
            return data
        return json.dumps(self._record(json.loads(data)), ensure_ascii=False, separators=(",", ":")).encode()

    def _record(self, record: dict[str, Any]) -> dict[str, Any]:
        """A protocol model: vocabulary kept, nested models walked, the rest free text."""
        out: dict[str, Any] = {}
        for key, value in record.items():
            if key in _VOCABULARY or (key == "name" and record.get("type") == "function_call"):
                out[key] = value  # a call's name is the tool's: vocabulary; a thread's name is text
            elif key == "item" and isinstance(value, dict):
                out[key] = self._record(value)
            elif key == "content" and isinstance(value, list):  # display blocks of an output
                out[key] = [self._record(v) if isinstance(v, dict) else self.value(v) for v in value]
            else:
                out[key] = self.value(value)
        return out

    def value(self, value: Any) -> Any:
        """Free JSON data (a schema, arguments) with every string in it redacted, keys included;
        two keys redacted alike both stay."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, v in value.items():
                new = base = self.text(key)
                n = 1
                while new in out:  # two keys redacted alike both stay
                    n += 1
                    new = f"{base} ({n})"
                out[new] = self.value(v)
            return out
        return value


def _escaped(text: str) -> set[str]:
    """``text`` as it may appear inside a JSON string: as is, escaped with or without ``\\uXXXX``."""
    return {text, json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]}
