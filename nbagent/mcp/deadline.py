"""A call's deadline that waiting for a person does not count against (DESIGN §9).

The tool-call deadline is a cancel scope whose deadline is pushed out while an elicitation
for that call (or a sign-in) waits for a human: waiting for the user is not the tool's time.
"""

from __future__ import annotations

import contextvars
import math
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import anyio


@dataclass(eq=False)
class CallControl:
    """One in-flight call's deadline, pausable while an elicitation waits for the user."""

    call_id: str | None
    scope: anyio.CancelScope
    remaining: float | None = None
    paused: int = 0
    waited: float = 0.0
    _paused_at: float = 0.0

    def pause(self) -> None:
        if self.paused == 0:
            self._paused_at = time.monotonic()
            if math.isfinite(self.scope.deadline):
                self.remaining = max(0.0, self.scope.deadline - anyio.current_time())
                self.scope.deadline = math.inf
        self.paused += 1

    def resume(self) -> None:
        self.paused -= 1
        if self.paused == 0:
            self.waited += time.monotonic() - self._paused_at
            if self.remaining is not None:
                self.scope.deadline = anyio.current_time() + self.remaining
                self.remaining = None


current_call: contextvars.ContextVar[tuple[object, CallControl] | None] = contextvars.ContextVar(
    "nbagent_mcp_current_call", default=None
)
"""The connection and the call the running task is in: which call a server's request is for."""


@contextmanager
def paused(controls: Iterable[CallControl]) -> Iterator[None]:
    """Every deadline in ``controls`` stopped while the block waits for a person."""
    held = list(controls)
    for control in held:
        control.pause()
    try:
        yield
    finally:
        for control in held:
            control.resume()
