"""A stream of text fragments (a message's deltas) redacted as its whole text is."""

from __future__ import annotations

from nbagent.secrets.redactor import Redactor

__all__ = ["StreamRedactor"]


class StreamRedactor:
    """One stream of text fragments (a message's deltas) shown as it comes, yet redacted as its
    whole text is: a secret the model streams in pieces is in no one fragment. What may still
    begin a secret is held until a later fragment shows whether it does; ``end`` releases it."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, fragment: str, redactor: Redactor) -> str:
        """What of the stream can be shown now, redacted (``""`` while all of it is held)."""
        shown, self._held = redactor.release(self._held + fragment)
        return shown

    def end(self, redactor: Redactor) -> str:
        """The held tail, redacted: the stream is over, so no secret can complete it any more."""
        held, self._held = self._held, ""
        return redactor.text(held)
