"""Bounded waits on a condition: how a test waits for something to happen. A test never sleeps
as evidence; it polls what it expects, with a deadline, and fails naming what never came."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    """Poll ``condition`` until it is truthy and return its value; fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.02)
    return value


async def until(condition: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    """:func:`wait_for` for a test whose event loop must keep running meanwhile."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(0.02)
    return value
