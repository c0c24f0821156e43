"""What one turn works with, apart from the loop that runs it (``turn.py``) and the call steps
(``tool_call.py``), so each imports this and neither imports the other.

A ``TurnContext`` is what the session gives a turn, fixed when it starts; its ``state`` is all
the turn changes as it runs. Per-turn settings (model, policy, who can be asked) never leak
into the session.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from nbagent.calls.trace import trace_id_for_turn
from nbagent.checkpoint import TurnCheckpoint
from nbagent.config import Config
from nbagent.core.approval import ApprovalDesk
from nbagent.core.bus import EventBus
from nbagent.core.context import ContextBudget
from nbagent.core.provider import ToolProvider
from nbagent.core.request_tools import RequestTools
from nbagent.core.router import ToolRouter
from nbagent.core.thread import ThreadState
from nbagent.core.usage import TokenMeter
from nbagent.models.base import ModelClient
from nbagent.protocol import Entry, Event, EventMsg, Item, Policy, TokenUsage, ToolSpec

_NO_USAGE = TokenUsage()


def sooner(a: float | None, b: float | None) -> float | None:
    """The shorter of two timeouts, either of which may be unset (``None``)."""
    return a if b is None else b if a is None else min(a, b)


@dataclass(frozen=True)
class TurnSettings:
    """The configuration values a turn reads, fixed when it starts."""

    max_tool_rounds: int
    parallel_tool_calls: bool
    approval_timeout_sec: float | None
    tool_output_max_bytes: int
    rollout_output_max_bytes: int

    @classmethod
    def of(cls, config: Config, ask_timeout: float | None = None) -> TurnSettings:
        return cls(
            max_tool_rounds=config.max_tool_rounds,
            parallel_tool_calls=config.parallel_tool_calls,
            approval_timeout_sec=sooner(config.approval_timeout_sec, ask_timeout),
            tool_output_max_bytes=config.tool_output_max_bytes,
            rollout_output_max_bytes=config.rollout_output_max_bytes,
        )


@dataclass
class TurnState:
    """What a turn accumulates as it runs; nothing else of a turn changes."""

    budget: ContextBudget = field(default_factory=ContextBudget)
    """The model's context window and where compaction starts (``ContextBudget.of``); replaced
    when the model reports a window config does not give."""
    catalogue: Mapping[str, tuple[ToolSpec, ToolProvider]] = field(default_factory=dict)
    """The tools of the latest model request, by the name the model calls."""
    preamble_text: str = ""
    usage: TokenUsage = _NO_USAGE
    """Replaced, never changed, as the model reports usage: the empty one is shared."""
    begun: dict[str, float] = field(default_factory=dict)
    """Call id -> start time of every call whose ``tool_call_begin`` went out."""
    checkpoint: TurnCheckpoint | None = None
    """The workspace as it was before the turn's first change (``core/checkpoints.py``)."""
    checkpoint_failed: bool = False


@dataclass(frozen=True)
class Checkpoints:
    """Where a turn's checkpoint snapshots: the workspace, and the home its private store is under."""

    workspace: str
    home: str


@dataclass(frozen=True, eq=False)
class TurnContext:
    """What one turn is given, and nothing more of its session: the model, the tool router, the
    approval desk, the thread it records into, the bus it announces on and its settings."""

    turn_id: str
    model: ModelClient | None
    """``None`` for calls that come from outside a model turn (``Session.call_tool``)."""
    model_name: str
    policy: Policy
    router: ToolRouter
    asks: ApprovalDesk
    thread: ThreadState
    bus: EventBus
    settings: TurnSettings
    instructions: Callable[[], str]
    """Read at every model request: an MCP server's instructions can arrive while a turn runs."""
    servers_ready: Callable[[], Awaitable[None]]
    stop_reason: Callable[[], str | None]
    """Why the turn task was cancelled (``Session.interrupt``'s reason)."""
    cancel_asks: Callable[[], None]
    entry: Entry = "python"
    interactive: Callable[[], bool] = lambda: False
    """Whether someone can answer an approval now: read at each ask, since a front end may
    detach while the turn runs (``Session.interactive``)."""
    preamble: Callable[[], Awaitable[str | None]] | None = None
    """Read once as the turn starts: what a front end shows the model of its workspace (the
    notebook's cells and names, ``%agent context on``), added to the instructions."""
    request_tools: RequestTools | None = None
    """Picks the tools of each request when the catalogue holds more than the model accepts."""
    checkpoints: Checkpoints | None = None
    """Set: the turn snapshots the workspace before its first change, so it can be undone."""
    meter: TokenMeter | None = None
    """Counts each request's tokens into the user's day (``None``: counted nowhere but the thread)."""
    state: TurnState = field(default_factory=TurnState)

    trace_id: str = field(init=False)
    """One W3C trace per turn; each call is a span of it (a hash, made once per turn)."""

    def __post_init__(self) -> None:
        # Not a ``cached_property``: on Python 3.11 its first read takes a lock, and an outside
        # call is a turn of its own that reads it once.
        object.__setattr__(self, "trace_id", trace_id_for_turn(self.turn_id))

    def emit(self, event: EventMsg) -> Event:
        """Announce an event of this turn (it carries the turn's id)."""
        return self.bus.emit(event, turn_id=self.turn_id)

    def record(self, item: Item) -> None:
        self.thread.record(item)
