"""A recorded thread as a replay script (``nbagent export replay``), so a thread driven once by
a real model plays again offline, with the same texts, reasoning and tool calls.

The rollout holds what each model request produced, not the requests: a request's reasoning,
reply and calls are recorded next to each other, and anything else (an output, an approval, an
answer to a question) ends that response. A request that produced nothing is still a position in
the script: a turn that ended after its calls ended on an empty reply (or, when it failed, on the
error), and the script keeps it so every later response stays where it was.

A reply that followed a call whose approval, question or result could go another way in the
replay becomes a ``branch``: the recorded reply under the outcome that happened, and a ``default``
that says it went otherwise, so the script never claims what did not happen (docs/replay.md).
The default keeps the recorded calls, so the number of rounds, and every later position, stays.

Usage is not in the rollout, so the script has none. The rollout is already redacted; the
secrets known at export time are removed again, for threads recorded before a key was set.
"""

from __future__ import annotations

import json
import os
import tempfile
from bisect import bisect_left
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nbagent.models.replay import load_script, previous_outcomes
from nbagent.protocol import (
    AssistantMessage,
    CompactionItem,
    FunctionCall,
    ReasoningItem,
    TurnRecord,
    UserMessage,
)
from nbagent.secrets import Redactor
from nbagent.store import ThreadNotFound, ThreadStore

__all__ = ["ExportError", "export_thread", "script_from_thread"]

_BRANCHED = ("declined", "cancelled", "accepted", "denied", "error", "approved")
"""Outcomes a replay may see differently, most specific first: the key a branch is filed under
(a declined question usually also fails the call, and the reply speaks of the question)."""
_WHAT_HAPPENED = {
    "approved": "the call to {tool} was approved",
    "denied": "the call to {tool} was denied",
    "accepted": "the question asked during {tool} was answered",
    "declined": "the question asked during {tool} was declined",
    "cancelled": "the question asked during {tool} was cancelled",
    "error": "the call to {tool} failed",
}


class ExportError(ValueError):
    """A thread or output path the export cannot use; the message names it."""


def _arguments(raw: str) -> dict[str, Any] | str:
    """An object as an object (readable, editable); anything else verbatim, so a malformed call
    replays malformed."""
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return value if isinstance(value, dict) else raw


def _default(recorded: dict[str, Any], outcome: str, tool: str) -> dict[str, Any]:
    said = _WHAT_HAPPENED[outcome].format(tool=tool)
    default: dict[str, Any] = {
        "text": f"When this script was recorded, {said}; this time it went otherwise, so its result above is what happened."
    }
    if recorded.get("tool_calls"):
        default["tool_calls"] = recorded["tool_calls"]
    return default


class _Builder:
    """Walks the items once, turning each model request's recorded output into a response."""

    def __init__(self, items: list[Any], ends: dict[str, TurnRecord]) -> None:
        self.items = items
        self.ends = ends
        self.responses: list[dict[str, Any]] = []
        self.current: dict[str, Any] | None = None
        self.start = 0
        """Index of the current response's first item (what the replay sees before it)."""
        self.turn: str | None = None
        self.after_calls = False
        """The last response of the turn made calls: another request followed them."""
        self.in_turn = 0
        self.calls: list[int] = []
        """Indices of every call so far (outside calls too: the replay sees them)."""

    def close(self) -> None:
        if self.current is not None:
            self._add(self.current, self.start)
            self.after_calls = bool(self.current.get("tool_calls"))
            self.current = None

    def _add(self, response: dict[str, Any], at: int) -> None:
        """File ``response`` as the next position, branched when it followed this turn's calls."""
        self.in_turn += 1
        last = bisect_left(self.calls, at) - 1
        # From the last call on is all previous_outcomes reads: no copy of the whole thread per reply.
        outcomes = previous_outcomes(self.items[self.calls[last] : at]) if self.in_turn > 1 and last >= 0 else set()
        key = next((k for k in _BRANCHED if k in outcomes), None)
        if key is None or "error" in response or not (response.get("text") or response.get("tool_calls")):
            self.responses.append(response)
            return
        default = _default(response, key, self.items[self.calls[last]].name)
        # A call approved (or answered) then failing in the replay must not hear the recorded success.
        failed = {} if "error" in outcomes else {"error": default}
        self.responses.append({"branch": {**failed, key: response, "default": default}})

    def end_turn(self, at: int) -> None:
        """The request that ended the turn, when it left nothing in the record."""
        self.close()
        if self.turn is None:
            return
        end = self.ends.get(self.turn)
        if self.after_calls or self.in_turn == 0:
            if end is not None and end.status == "completed":
                self._add({}, at)
            elif end is not None and end.status == "failed":
                self._add({"error": {"code": "other", "message": end.reason or "the model request failed"}}, at)
        self.turn, self.after_calls, self.in_turn = None, False, 0

    def model_item(self, n: int, item: ReasoningItem | AssistantMessage | FunctionCall) -> None:
        current = self.current
        starts_new = current is None or (
            isinstance(item, ReasoningItem) and bool(current)
            or isinstance(item, AssistantMessage) and ("text" in current or "tool_calls" in current)
        )
        if starts_new:
            self.close()
            self.current, self.start = {}, n
        assert self.current is not None
        if isinstance(item, ReasoningItem):
            self.current["reasoning"] = item.summary
        elif isinstance(item, AssistantMessage):
            self.current["text"] = item.text
        else:
            call = {"name": item.name, "arguments": _arguments(item.arguments)}
            self.current.setdefault("tool_calls", []).append(call)


def script_from_thread(items: list[Any], turns: Iterable[TurnRecord]) -> dict[str, Any]:
    """The replay script (``{"responses": [...], "summaries": [...]}``) of a thread's items.

    Only turns a person started count (they begin with their prompt); calls made from outside a
    model turn (``Session.call_tool``) are history the replay sees, not responses.
    """
    ends = {t.turn_id: t for t in turns if t.status != "started"}
    model_turns = {i.turn_id for i in items if isinstance(i, UserMessage) and i.turn_id}
    build = _Builder(items, ends)
    for n, item in enumerate(items):
        if isinstance(item, FunctionCall):
            build.calls.append(n)
        if isinstance(item, UserMessage):
            build.end_turn(n)
            build.turn = item.turn_id
        elif isinstance(item, ReasoningItem | AssistantMessage | FunctionCall) and item.turn_id in model_turns:
            build.model_item(n, item)
        else:
            build.close()
    build.end_turn(len(items))
    script: dict[str, Any] = {"responses": build.responses}
    summaries = [i.summary for i in items if isinstance(i, CompactionItem) and i.summary]
    if summaries:
        script["summaries"] = summaries
    return script


def export_thread(
    home: Path, ref: str, out: Path, *, force: bool = False, secrets: Iterable[str] = ()
) -> tuple[str, dict[str, Any], list[str]]:
    """Write the replay script of thread ``ref`` (id, name or unique id prefix, as resume takes
    it) to ``out``; returns the thread id, the script and the warnings of reading it.

    Refuses an existing ``out`` unless ``force``. The file is checked by the replay parser
    before it takes ``out``'s place, so a script written is a script that loads.
    """
    if out.is_dir():
        raise ExportError(f"{out} is a folder; give a file name for the script")
    if (out.exists() or out.is_symlink()) and not force:
        raise ExportError(f"{out} exists; pass --force to overwrite it")
    if not home.is_dir():  # reading must not create a home
        raise ExportError(f"no thread with id or name {ref!r}: {home} does not exist or is not a folder")
    with ThreadStore(home) as store:
        thread_id = store.resolve(ref)
        if thread_id is None:
            raise ExportError(f"no thread with id or name {ref!r} under {home}")
        try:
            loaded = store.load(thread_id)
        except ThreadNotFound as exc:
            raise ExportError(f"thread {exc.args[0]}") from None
        warnings = loaded.warnings + store.take_warnings()
    script = script_from_thread(loaded.items, loaded.turns)
    if not script["responses"]:
        raise ExportError(f"thread {thread_id} has no model turn to export (no prompt was sent in it)")
    redactor = Redactor(secrets)
    if redactor:
        script = redactor.value(script)
    _write_checked(out, script)
    return thread_id, script, warnings


def _write_checked(out: Path, script: dict[str, Any]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(script, f, ensure_ascii=False, indent=2)
            f.write("\n")
        load_script(Path(temp))
        os.replace(temp, out)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
