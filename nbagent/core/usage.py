"""The session's token meter: each model request's usage added to the user's day
(``nbagent.store.usage``), and the day read back for ``%agent`` and for a daily cap.

The cap is an administrator's (``[limits] max_tokens_per_day`` in ``requirements.toml``): no
user setting names it, so none can loosen it. It is checked before every model request, so a
turn that crosses it ends at its next request, with a message naming the cap, its file and the
day's count.

The thread's own total lives on the thread (``ThreadState.usage``, summed from its rollout on
resume); the day's is the user's, across kernels, so it is the ledger's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from nbagent.config.errors import ConfigError
from nbagent.config.requirements import Requirements, load_requirements
from nbagent.models.base import ModelError
from nbagent.protocol import TokenUsage
from nbagent.store.usage import LedgerError, UsageLedger, utc_day

USAGE_FOLDER = "usage"
"""Under the nbagent home: the ledger's days."""


class UsageLimitReached(ModelError):
    """The user's tokens of the day reached the requirements' cap: no request is sent."""

    def __init__(self, message: str) -> None:
        super().__init__("usage_limit", message)


class TokenMeter:
    def __init__(self, home: Path, warn: Callable[[str], object], requirements: Requirements | None = None) -> None:
        self.ledger = UsageLedger(home / USAGE_FOLDER)
        self._warn = warn
        self._failed = False
        self.cap = requirements.limits.max_tokens_per_day if requirements is not None else None
        self._cap_source = requirements.source("limits") if requirements is not None else ""

    @property
    def cap_text(self) -> str:
        return f"limits.max_tokens_per_day = {self.cap:,} in {self._cap_source}"

    def check(self) -> None:
        """Refuse a model request once the user's day has reached the cap (``UsageLimitReached``).
        A day that cannot be read counts as reached: the cap holds whatever became of its file."""
        if self.cap is None:
            return
        try:
            used = self.ledger.day().total_tokens
        except LedgerError as exc:
            raise UsageLimitReached(f"no model request is sent: {exc}, and requirements cap the tokens a day "
                                    f"({self.cap_text})") from None
        if used >= self.cap:
            raise UsageLimitReached(
                f"daily token limit reached: {used:,} tokens used today (UTC, counted in {self.ledger.path_for(utc_day())}) "
                f"of the {self.cap:,} that requirements allow ({self.cap_text}); no model request is sent until the UTC day ends"
            )

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
    """The thread's tokens and the user's day (and its cap, as the requirements say now), as
    ``%agent`` shows them."""
    try:
        requirements: Requirements | None = load_requirements()
    except ConfigError:
        requirements = None  # the session said so when it opened; the counts still show
    meter = TokenMeter(home, print, requirements)
    try:
        today = f"{meter.ledger.day().total_tokens:,} today (UTC, every kernel of yours)"
    except LedgerError as exc:
        today = f"today's count cannot be read: {exc}"
    if meter.cap is not None:
        today += f" of {meter.cap_text}"
    return (f"{thread.total_tokens:,} in this thread ({thread.input_tokens:,} in, "
            f"{thread.cached_input_tokens:,} cached, {thread.output_tokens:,} out, "
            f"{thread.reasoning_output_tokens:,} reasoning); {today}")
