"""SIGTERM and SIGHUP end a command the way Ctrl-C does, not by killing it where it stands.

By default those signals kill the interpreter at once: no ``finally`` runs, so the MCP servers
the command started (and what they started) are left behind, and a server that ignores the end
of its stdin runs on for ever. Here the first such signal cancels the main task instead: every
``async with`` closes its sessions and servers, and the command then exits 128 + the signal
number, as a shell reports a process killed by it.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(Exception):
    """The command was asked to stop by ``signum``; its cleanup has already run."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``; a stop signal cancels ``main`` once, then raises :class:`Stopped`.

    Later signals during the cleanup are ignored: the cleanup is bounded, and cutting it short
    is what would leave processes behind.
    """

    async def guarded() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        received: list[int] = []

        def stop(signum: int) -> None:
            if not received:
                received.append(signum)
                task.cancel()

        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, stop, sig)
        try:
            return await main
        except asyncio.CancelledError:
            if received and task.uncancel() == 0:
                raise Stopped(received[0]) from None
            raise
        finally:
            for sig in STOP_SIGNALS:
                loop.remove_signal_handler(sig)

    return asyncio.run(guarded())
