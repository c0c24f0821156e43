"""Persistence: rollout JSONL per thread (the facts) and a SQLite index (for finding them)."""

from __future__ import annotations

from nbagent.store.index import ThreadIndex, ThreadStats, ThreadSummary, summarize_rollout
from nbagent.store.lock import ThreadBusy
from nbagent.store.repair import ABORTED_OUTPUT, open_calls, repair_open_calls, without_orphan_outputs
from nbagent.store.rollout import RolloutWriteError, RolloutWriter, read_rollout
from nbagent.store.threads import LoadedThread, ThreadNotFound, ThreadStore

__all__ = [
    "ABORTED_OUTPUT",
    "LoadedThread",
    "RolloutWriteError",
    "RolloutWriter",
    "ThreadBusy",
    "ThreadIndex",
    "ThreadNotFound",
    "ThreadStats",
    "ThreadStore",
    "ThreadSummary",
    "open_calls",
    "read_rollout",
    "repair_open_calls",
    "without_orphan_outputs",
    "summarize_rollout",
]
