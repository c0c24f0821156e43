"""The session's token meter: each model request's usage added to the user's day
(``nbagent.store.usage``), and the day read back for ``%agent``.

The thread's own total lives on the thread (``ThreadState.usage``, summed from its rollout on
resume); the day's is the user's, across kernels, so it is the ledger's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from nbagent.protocol import TokenUsage
from nbagent.store.usage import LedgerError, UsageLedger

USAGE_FOLDER = "usage"
"""Under the nbagent home: the ledger's days."""


class TokenMeter:
    def __init__(self, home: Path, warn: Callable[[str], object]) -> None:
        self.ledger = UsageLedger(home / USAGE_FOLDER)
        self._warn = warn
        self._failed = False

    def count(self, last: TokenUsage) -> None:
        """Add one request's usage to the day; a ledger that cannot be written is said once."""
        try:
            self.ledger.add(last)
            self._failed = False
        except LedgerError as exc:
            if not self._failed:
                self._warn(f"{exc}: this request's tokens are not in the day's count")
            self._failed = True


def day_usage(home: Path) -> TokenUsage:
    """The user's tokens of this UTC day, as every kernel of theirs counted them; raises ``LedgerError``."""
    return UsageLedger(home / USAGE_FOLDER).day()


def tokens_line(thread: TokenUsage, home: Path) -> str:
    """The thread's tokens and the user's day, as ``%agent`` shows them."""
    try:
        today = f"{day_usage(home).total_tokens:,} today (UTC, every kernel of yours)"
    except LedgerError as exc:
        today = f"today's count cannot be read: {exc}"
    return (f"{thread.total_tokens:,} in this thread ({thread.input_tokens:,} in, "
            f"{thread.cached_input_tokens:,} cached, {thread.output_tokens:,} out, "
            f"{thread.reasoning_output_tokens:,} reasoning); {today}")
