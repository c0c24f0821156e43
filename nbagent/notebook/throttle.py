"""Coalescing of many small updates into a few display messages.

A model can stream hundreds of deltas per second; every widget update is one comm message
that the browser must re-render. ``Coalescer`` lets the first update through at once, then
at most one flush per ``interval`` seconds (a ``loop.call_later`` timer), and a final
``flush()`` at the end so nothing is lost.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

DEFAULT_INTERVAL = 0.05
"""Seconds between flushes: at most 20 display updates per second per stream."""


class Coalescer:
    def __init__(self, push: Callable[[], None], interval: float = DEFAULT_INTERVAL) -> None:
        self._push = push
        self._interval = interval
        self._last = float("-inf")
        self._timer: asyncio.TimerHandle | None = None
        self._dirty = False
        self.flushes = 0

    def touch(self) -> None:
        """Note that there is something new to show; pushes now or schedules one push."""
        self._dirty = True
        if self._timer is not None:
            return
        wait = self._last + self._interval - time.monotonic()
        if wait <= 0:
            self.flush()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            # No loop (plain script, in-process tests): nothing can flush later, so push now.
            self.flush()
            return
        self._timer = loop.call_later(wait, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self.flush()

    def flush(self) -> None:
        """Push pending changes now (also the final flush at the end of a stream)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._dirty:
            return
        self._dirty = False
        self._last = time.monotonic()
        self.flushes += 1
        self._push()
