"""What ``inspect`` shows (DESIGN §12.3): the data as pydantic models, built only when asked.

A model request is a projection of runtime state, so the inspector keeps no copy of it: it keeps
*references* to the requests of the last turn a model client was given (``Inspector.watch``; the
last ``REQUESTS_KEPT`` of them, counting the ones dropped) and the events of the last turns (a
bounded deque the bus appends to). At each turn's end it writes, beside the thread's rollout,
what a process that was not there needs: each kept request's instructions and tools with the
number of items it was built from (the items themselves are the rollout's, and the view is a
function of them), and the turn's timeline. Both, like every view here, are redacted by
the thread's rollout redactor (``ThreadState.redactor``): they hide what the rollout hides. They
are views, not facts: deleting them loses nothing of the thread.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import suppress
from typing import Any, Literal

from pydantic import BaseModel, Field

from nbagent.core.approval import ApprovalMemory, ask_reason
from nbagent.core.context import ContextView
from nbagent.core.thread import redactor_for
from nbagent.models.base import ModelClient, ModelEvent, ModelRequest
from nbagent.protocol import Event, Item, ItemRecord, Policy, RolloutLine, ToolSpec, TurnRecord
from nbagent.secrets import Redactor, redacted
from nbagent.store.inspect_files import InspectFiles

__all__ = [
    "EVENTS_KEPT",
    "Inspector",
    "REQUESTS_KEPT",
    "RequestView",
    "RequestsView",
    "SchemaChange",
    "TimelineEntry",
    "ToolView",
    "TurnView",
    "effective_approval",
    "redactor_for",
    "request_from_record",
    "requests_from_record",
    "timeline",
    "tool_views",
    "turn_from_rollout",
]

REQUESTS_KEPT = 20
"""Requests of one turn kept for ``inspect request --all``: a turn that makes more keeps its last
ones and counts the rest, so a long turn costs memory and a written file of this many at most."""
EVENTS_KEPT = 5000
"""Events kept in memory for ``inspect turn``: the last few turns of any size."""
ENTRIES_PER_TURN = 1000
"""A turn's timeline as written to disk is cut after this many entries (deltas coalesced)."""
_COALESCED = frozenset({"agent_message_delta", "reasoning_delta", "progress", "exec_command_output_delta", "mcp_log"})
_TURN_ENDS = frozenset({"turn_completed", "turn_aborted", "turn_failed"})
_DETAIL_FIELDS = ("tool", "server", "status", "decision", "action", "message", "text", "delta", "chunk", "reason", "error")
DETAIL_CHARS = 120


# -- tools -------------------------------------------------------------------------------------


class SchemaChange(BaseModel):
    """One difference between the schema a server gave and the one the model sees."""

    path: str
    """Where, as ``properties.when.format`` (``$`` for the whole schema)."""
    change: Literal["removed", "added", "changed"]
    raw: Any = None
    exposed: Any = None


class ToolView(BaseModel):
    """One tool: who it really is, what the model sees of it and what a call would do now."""

    name: str
    """Model-visible name."""
    server: str | None
    raw_name: str
    source: str
    title: str
    description: str
    annotations: dict[str, Any]
    approval_mode: str
    """As configured (per tool over per server over the default)."""
    effective: Literal["runs", "asks", "declined"]
    """What the approval logic would do with a call now, under ``policy``."""
    policy: Policy
    why: str
    schema_changes: list[SchemaChange] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    """What sanitising the schema said it changed or dropped."""


def effective_approval(
    spec: ToolSpec, policy: Policy, remembered: bool = False
) -> tuple[Literal["runs", "asks", "declined"], str]:
    """What a call of ``spec`` does under ``policy`` and why: the one answer every listing of
    tools gives, since the configured mode alone (``auto``) says nothing of a destructive tool
    that asks."""
    reason = ask_reason(spec, policy, remembered)
    if reason is None:
        why = (
            f"policy {policy!r}" if policy == "full-auto" else "approved for this session" if remembered
            else "approval_mode 'approve'" if spec.approval_mode == "approve" else "it says it is read-only"
        )
        return "runs", f"runs without asking: {why}"
    if policy == "never":
        return "declined", f"would ask ({reason}), and policy 'never' declines it without running"
    return "asks", reason


def schema_changes(raw: Any, exposed: Any, path: str = "$") -> list[SchemaChange]:
    """Every leaf where ``exposed`` differs from ``raw`` (keys added, removed or changed)."""
    if isinstance(raw, dict) and isinstance(exposed, dict):
        out: list[SchemaChange] = []
        for key in [*raw, *(k for k in exposed if k not in raw)]:
            where = key if path == "$" else f"{path}.{key}"
            if key not in exposed:
                out.append(SchemaChange(path=where, change="removed", raw=raw[key]))
            elif key not in raw:
                out.append(SchemaChange(path=where, change="added", exposed=exposed[key]))
            else:
                out += schema_changes(raw[key], exposed[key], where)
        return out
    if isinstance(raw, list) and isinstance(exposed, list) and len(raw) == len(exposed):
        return [c for i, (a, b) in enumerate(zip(raw, exposed, strict=True)) for c in schema_changes(a, b, f"{path}[{i}]")]
    return [] if raw == exposed else [SchemaChange(path=path, change="changed", raw=raw, exposed=exposed)]


def tool_views(specs: list[ToolSpec], policy: Policy, memory: ApprovalMemory | None = None) -> list[ToolView]:
    views = []
    for spec in specs:
        effective, why = effective_approval(spec, policy, memory is not None and memory.knows(spec))
        views.append(
            ToolView(
                name=spec.name, server=spec.server, raw_name=spec.raw_name or spec.name, source=spec.source,
                title=spec.display_name, description=spec.description,
                annotations=spec.annotations.model_dump(exclude_none=True) if spec.annotations else {},
                approval_mode=spec.approval_mode, effective=effective, policy=policy, why=why,
                schema_changes=schema_changes(spec.input_schema, spec.parameters) if spec.input_schema else [],
                warnings=list(spec.warnings),
            )
        )
    return views


# -- the request -------------------------------------------------------------------------------


class _Request(BaseModel):
    turn_id: str | None
    at: float
    model: str
    purpose: str
    instructions: str | None
    tools: list[dict[str, Any]]
    """Each tool as the model sees it: name, description, parameters, strict."""
    parallel_tool_calls: bool


class RequestView(_Request):
    """The last model request, as the model client was given it."""

    thread_id: str
    items: list[dict[str, Any]]
    """The thread's view the request carried (compaction applied), oldest first."""


class RequestsView(BaseModel):
    """Every model request of the last turn still kept, oldest first."""

    thread_id: str
    turn_id: str | None
    dropped: int
    """Earlier requests of that turn not kept (past ``REQUESTS_KEPT``): the first one shown is
    the turn's request number ``dropped + 1``."""
    requests: list[RequestView]


class RequestRecord(_Request):
    """What is written to disk of a request: everything but the items (they are the rollout's:
    the first ``item_count`` of them, seen through the context view)."""

    item_count: int
    as_before: list[Literal["instructions", "tools"]] = []
    """Fields left empty on disk because they equal the request before's (a long turn's requests
    mostly share them, and 128 tools' schemas are hundreds of kB); ``read`` fills them back."""


class RequestsRecord(BaseModel):
    """What is written to disk of a turn's requests (its summary requests are not: their items
    are no prefix of the thread's)."""

    turn_id: str | None
    dropped: int
    requests: list[RequestRecord]

    @classmethod
    def read(cls, text: str) -> RequestsRecord:
        """The record in ``text``; a file an older version wrote holds one request alone."""
        try:
            record = cls.model_validate_json(text)
        except ValueError:
            one = RequestRecord.model_validate_json(text)
            return cls(turn_id=one.turn_id, dropped=0, requests=[one])
        for before, request in itertools.pairwise(record.requests):
            for name in request.as_before:
                setattr(request, name, getattr(before, name))
            request.as_before = []
        if record.requests:
            record.requests[0].as_before = []  # nothing before the first to take them from
        return record

    def compact(self) -> RequestsRecord:
        """The same requests with what each shares with the one before left out (``as_before``)."""
        requests = [self.requests[0].model_copy()] if self.requests else []
        for before, request in itertools.pairwise(self.requests):
            same = [name for name in ("instructions", "tools") if getattr(request, name) == getattr(before, name)]
            requests.append(request.model_copy(update={"as_before": same, **{n: [] if n == "tools" else None for n in same}}))
        return self.model_copy(update={"requests": requests})


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "parameters": spec.parameters, "strict": spec.strict}


def _view(thread_id: str, record: RequestRecord, items: list[Item]) -> RequestView:
    return RequestView(
        thread_id=thread_id, items=[i.model_dump(mode="json", exclude_none=True) for i in items],
        **record.model_dump(exclude={"item_count"}),
    )


def request_from_record(thread_id: str, record: RequestRecord, lines: list[RolloutLine]) -> RequestView:
    """The request rebuilt from its record and the thread's rollout."""
    items = [line.item for line in lines if isinstance(line, ItemRecord)][: record.item_count]
    return _view(thread_id, record, list(ContextView().sync(items)))


def requests_from_record(thread_id: str, record: RequestsRecord, lines: list[RolloutLine]) -> RequestsView:
    """A turn's requests rebuilt from their record and the thread's rollout."""
    return RequestsView(
        thread_id=thread_id, turn_id=record.turn_id, dropped=record.dropped,
        requests=[request_from_record(thread_id, one, lines) for one in record.requests],
    )


# -- the turn ----------------------------------------------------------------------------------


class TimelineEntry(BaseModel):
    seq: int
    """The event's sequence number in its session (a rollout line number when read from disk)."""
    type: str
    at: float
    offset_ms: float
    """Since the turn started."""
    count: int = 1
    """Consecutive events of this type folded into this entry (text deltas)."""
    detail: str = ""


class TurnView(BaseModel):
    thread_id: str
    turn_id: str
    source: Literal["events", "rollout"]
    """``events``: what the session emitted; ``rollout``: only the recorded lines were there."""
    status: str | None
    """How the turn ended; ``None`` while it runs."""
    duration_ms: float | None
    entries: list[TimelineEntry]


def _detail(msg: Any, redact: Callable[[str], str] = str) -> str:
    """A few words of ``msg``, redacted before they are cut: a secret across the cut would
    otherwise leave its head, which no redaction of the cut text finds."""
    for name in _DETAIL_FIELDS:
        value = getattr(msg, name, None)
        if value:
            return " ".join(redact(str(value)).split())[:DETAIL_CHARS]
    return ""


def timeline(
    thread_id: str, turn_id: str, events: list[Event], *, redact: Callable[[str], str], limit: int | None = None
) -> TurnView:
    """The turn's events as entries; ``redact`` is applied to each detail (events are raw)."""
    entries: list[TimelineEntry] = []
    start = events[0].at if events else 0.0
    status = None
    for event in events:
        kind = event.msg.type
        if kind in _TURN_ENDS:
            status = kind.removeprefix("turn_")
        last = entries[-1] if entries else None
        if last is not None and last.type == kind and kind in _COALESCED:
            last.count += 1
            continue
        if limit is not None and len(entries) >= limit:
            break
        entries.append(
            TimelineEntry(seq=event.seq, type=kind, at=event.at, offset_ms=(event.at - start) * 1000,
                          detail=_detail(event.msg, redact))  # fmt: skip
        )
    duration = (events[-1].at - start) * 1000 if events and status else None
    return TurnView(thread_id=thread_id, turn_id=turn_id, source="events", status=status, duration_ms=duration,
                    entries=entries)  # fmt: skip


def turn_from_rollout(thread_id: str, turn_id: str | None, lines: list[RolloutLine]) -> TurnView | None:
    """A turn as its recorded lines tell it (no events were kept for it): the last turn when
    ``turn_id`` is ``None``."""
    starts = [line.turn_id for line in lines if isinstance(line, TurnRecord) and line.status == "started"]
    if turn_id is None:
        turn_id = starts[-1] if starts else None
    if turn_id is None or turn_id not in starts:
        return None
    entries: list[TimelineEntry] = []
    start: float | None = None
    status = None
    for n, line in enumerate(lines, 1):
        if isinstance(line, TurnRecord) and line.turn_id == turn_id:
            start = line.at if start is None else start
            status = None if line.status == "started" else line.status
            entries.append(TimelineEntry(seq=n, type=f"turn_{line.status}", at=line.at,
                                         offset_ms=(line.at - start) * 1000, detail=line.reason or ""))  # fmt: skip
        elif isinstance(line, ItemRecord) and getattr(line.item, "turn_id", None) == turn_id:
            entries.append(TimelineEntry(seq=n, type=line.item.type, at=start or 0.0, offset_ms=0.0,
                                         detail=_detail(line.item)))  # the rollout's text is redacted already  # fmt: skip
    duration = entries[-1].offset_ms if status else None
    return TurnView(thread_id=thread_id, turn_id=turn_id, source="rollout", status=status, duration_ms=duration,
                    entries=entries)  # fmt: skip


# -- the session's inspector ---------------------------------------------------------------------


_Sent = tuple[ModelRequest, int, float, str | None]
"""A request, the number of thread items it was built from, when it was sent, and its turn."""


class Inspector:
    """Kept by a session for ``inspect``: O(1) per event and per request, written at turn ends."""

    def __init__(self, redactor: Callable[[], Redactor], files: Callable[[], InspectFiles | None]) -> None:
        self._redactor = redactor
        """The thread's rollout redactor (``ThreadState.redactor``): the views hide what it hides."""
        self._files = files
        self.events: deque[Event] = deque(maxlen=EVENTS_KEPT)
        self.requests: deque[_Sent] = deque(maxlen=REQUESTS_KEPT)
        """The last turn's requests, each with the number of thread items it was built from,
        when, and its turn; the last is the last request."""
        self.dropped = 0
        """Requests of that turn that fell out of ``requests``."""
        self._items: Callable[[], list[Item]] = list
        self._turn: Callable[[], str | None] = lambda: None

    def follow(self, items: Callable[[], list[Item]], turn: Callable[[], str | None]) -> None:
        """Where the thread's items and the running turn are read at each request."""
        self._items, self._turn = items, turn

    def watch(self, client: ModelClient) -> ModelClient:
        return _Watched(client, self)

    def on_event(self, event: Event) -> None:
        self.events.append(event)
        if event.msg.type in _TURN_ENDS and event.turn_id:
            self._write(event.turn_id)

    def turn(self, thread_id: str, turn_id: str | None = None) -> TurnView | None:
        """The events of ``turn_id`` (default: the last turn) still kept in memory."""
        if turn_id is None:
            turn_id = next((e.turn_id for e in reversed(self.events) if e.msg.type == "turn_started"), None)
        events = [e for e in self.events if turn_id is not None and e.turn_id == turn_id]
        return timeline(thread_id, turn_id, events, redact=self.redactor().text) if turn_id and events else None

    def sent(self, request: ModelRequest) -> None:
        """Keep ``request`` (a reference): the first of a new turn lets the last turn's go."""
        turn_id = self._turn()
        if self.requests and self.requests[-1][3] != turn_id:
            self.requests.clear()
            self.dropped = 0
        self.dropped += len(self.requests) == self.requests.maxlen
        self.requests.append((request, len(self._items()), time.time(), turn_id))

    def last_request(self, thread_id: str) -> RequestView | None:
        return self._shown(thread_id, self.requests[-1]) if self.requests else None

    def turn_requests(self, thread_id: str) -> RequestsView | None:
        """Every request of the last turn still kept, oldest first (``inspect request --all``)."""
        if not self.requests:
            return None
        return RequestsView(thread_id=thread_id, turn_id=self.requests[-1][3], dropped=self.dropped,
                            requests=[self._shown(thread_id, sent) for sent in self.requests])  # fmt: skip

    def _shown(self, thread_id: str, sent: _Sent) -> RequestView:
        return redacted(_view(thread_id, _record(*sent), list(sent[0].items)), self.redactor())

    def redactor(self) -> Redactor:
        return self._redactor()

    def _write(self, turn_id: str) -> None:
        """The turn's timeline and its requests, redacted, beside the rollout."""
        files = self._files()
        if files is None:
            return
        with suppress(OSError):  # a view, not a fact: a full disk must not end the turn's last step
            self._write_to(files, turn_id)

    def _write_to(self, files: InspectFiles, turn_id: str) -> None:
        redactor = self.redactor()
        events = [e for e in self.events if e.turn_id == turn_id]
        view = timeline(events[0].thread_id if events else "", turn_id, events, redact=redactor.text, limit=ENTRIES_PER_TURN)
        files.append_turn(view.model_dump_json())
        kept = [_record(*sent) for sent in self.requests if sent[3] == turn_id and sent[0].purpose == "turn"]
        if kept:
            record = RequestsRecord(turn_id=turn_id, dropped=self.dropped, requests=kept).compact()
            files.write_request(redactor.text(record.model_dump_json()))


def _record(request: ModelRequest, count: int, at: float, turn_id: str | None) -> RequestRecord:
    return RequestRecord(
        turn_id=turn_id, at=at, model=request.model, purpose=request.purpose, instructions=request.instructions,
        tools=[_tool(spec) for spec in request.tools], parallel_tool_calls=request.parallel_tool_calls,
        item_count=count,
    )


class _Watched:
    """A model client whose requests the inspector sees (a reference, nothing copied)."""

    def __init__(self, inner: ModelClient, inspector: Inspector) -> None:
        self._inner = inner
        self._inspector = inspector
        self.label = inner.label
        self.scripted = inner.scripted

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self._inspector.sent(request)
        return self._inner.stream(request)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
