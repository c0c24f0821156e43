"""Asks waiting for a person (DESIGN §5, §6): one mechanism for approvals and server questions.

An ask is registered under its id before its request is emitted (so a subscriber may answer at
once) and ends in exactly one ``Resolution``: by the user, by policy, by a timeout, unanswered
(its front end knows no answer will come) or by an interrupt. Every resolution is recorded and
announced by the desk that asked. When no one can answer (policy ``never``, no front end
attached) no request is emitted: the ask is resolved by policy at once, and the resolution says
why.

The vocabulary: a ``Resolution`` is how one ask ended; a desk turns it into what its caller
needs (``ApprovalOutcome`` for a tool call, ``ElicitOutcome`` for a server), as ``TurnOutcome``
says how a turn ended.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from nbagent.core.bus import EventBus
from nbagent.protocol import AnsweredBy, EventMsg, Item, Policy, WarningEvent

Record = Callable[[Item], None]
"""Where a desk writes the item that records a resolution (the thread's history and rollout)."""

RequestT = TypeVar("RequestT", bound=EventMsg)
AnswerT = TypeVar("AnswerT")


@dataclass(frozen=True)
class Resolution(Generic[AnswerT]):
    """How one ask ended: the answer that applies, who gave it, and why when no person did."""

    answer: AnswerT
    by: AnsweredBy
    message: str | None = None


def no_one_to_answer(policy: Policy, interactive: bool) -> str | None:
    """Why no person can answer an ask now, or ``None`` when someone can."""
    if policy == "never":
        return "policy 'never'"
    if not interactive:
        return "no front end is attached to ask"
    return None


@dataclass
class _Waiting(Generic[RequestT, AnswerT]):
    request: RequestT
    turn_id: str | None
    future: asyncio.Future[Resolution[AnswerT]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class PendingAsks(ABC, Generic[RequestT, AnswerT]):
    """Asks of one kind, keyed by id. A desk says what its asks are called, the answer that
    applies when no person gives one, and the item and event that record a resolution."""

    noun = "ask"
    """How a warning names an ask and its id, e.g. ``approval with call id``."""

    def __init__(self, bus: EventBus, record: Record) -> None:
        self._bus = bus
        self._record = record
        self._waiting: dict[str, _Waiting[RequestT, AnswerT]] = {}

    @abstractmethod
    def fallback(self, request: RequestT, by: AnsweredBy) -> AnswerT:
        """The answer when no person gives one (policy, timeout, unanswered, interrupt)."""

    @abstractmethod
    def declined(self, request: RequestT, why: str) -> str:
        """What the resolution says when no one could be asked (``why``: who is missing)."""

    @abstractmethod
    def records(self, request: RequestT, resolution: Resolution[AnswerT], turn_id: str | None) -> tuple[Item, EventMsg]:
        """The item that records a resolution and the event that announces it."""

    def requests(self) -> dict[str, RequestT]:
        """The requests still waiting for an answer, by id."""
        return {key: waiting.request for key, waiting in self._waiting.items() if not waiting.future.done()}

    async def await_answer(
        self,
        key: str,
        request: RequestT,
        *,
        turn_id: str | None,
        policy: Policy,
        interactive: bool,
        timeout: float | None,
    ) -> Resolution[AnswerT]:
        """Emit the request and wait for its resolution (recorded before it returns).

        Cancelling the waiting task settles the ask as interrupted and raises on."""
        why = no_one_to_answer(policy, interactive)
        if why is not None:
            return self.resolve(request, self.decline(request, why), turn_id)
        waiting = self._waiting[key] = _Waiting(request, turn_id)  # before the event: it may be answered at once
        self._bus.emit(request, turn_id=turn_id)
        try:
            async with asyncio.timeout(timeout):
                resolution = await asyncio.shield(waiting.future)
        except TimeoutError:
            resolution = self.without_answer(request, "timeout", f"No answer within {timeout:g} s.")
        except asyncio.CancelledError:
            self.resolve(request, self.interrupted(request), turn_id)
            raise
        finally:
            self._waiting.pop(key, None)
        return self.resolve(request, resolution, turn_id)

    def without_answer(self, request: RequestT, by: AnsweredBy, message: str) -> Resolution[AnswerT]:
        """How an ask ends when no person answers it: the fallback, and why."""
        return Resolution(self.fallback(request, by), by, message)

    def decline(self, request: RequestT, why: str) -> Resolution[AnswerT]:
        """The resolution of an ask no one can answer."""
        return self.without_answer(request, "policy", self.declined(request, why))

    def interrupted(self, request: RequestT) -> Resolution[AnswerT]:
        return self.without_answer(request, "interrupt", "The turn was interrupted.")

    def resolve(self, request: RequestT, resolution: Resolution[AnswerT], turn_id: str | None) -> Resolution[AnswerT]:
        """Record and announce how an ask ended; every ask passes here exactly once."""
        item, event = self.records(request, resolution, turn_id)
        self._record(item)
        self._bus.emit(event, turn_id=turn_id)
        return resolution

    def waiting(self, key: str) -> RequestT | None:
        """The request waiting under ``key``; ``None``, with a warning, when none is."""
        waiting = self._waiting.get(key)
        if waiting is None or waiting.future.done():
            self._bus.emit(WarningEvent(message=self.not_waiting(key)))
            return None
        return waiting.request

    def not_waiting(self, key: str) -> str:
        return f"no pending {self.noun} {key!r}"

    def user_answered(
        self, key: str, answer: AnswerT, message: str | None = None, by: Literal["user", "code"] = "user"
    ) -> str | None:
        """A person's answer (or code's in their place); why not taken (with a warning) when
        nothing waits under ``key``."""
        if self.waiting(key) is None:
            return self.not_waiting(key)
        self._waiting[key].future.set_result(Resolution(answer, by, message))
        return None

    def unanswered(self, key: str, why: str) -> str | None:
        """Settle the ask waiting under ``key`` now as nobody answering: its front end knows no
        answer will come (the client it asked failed or left, it cannot show the question), so
        the turn goes on without waiting out the timeout. Why not (with a warning) when nothing
        waits under ``key``."""
        request = self.waiting(key)
        if request is None:
            return self.not_waiting(key)
        self._waiting[key].future.set_result(self.without_answer(request, "unanswered", why))
        return None

    def refuse(self, key: str, message: str) -> str:
        """Turn an answer down (it does not fit); the ask goes on waiting. Returns ``message``."""
        waiting = self._waiting.get(key)
        self._bus.emit(WarningEvent(message=message), turn_id=waiting.turn_id if waiting else None)
        return message

    def cancel_all(self) -> None:
        """Resolve every waiting ask as interrupted (interrupt, shutdown)."""
        for waiting in self._waiting.values():
            if not waiting.future.done():
                waiting.future.set_result(self.interrupted(waiting.request))
