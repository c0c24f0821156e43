"""``ThreadStore``: threads on disk under a home directory, rollouts plus the index.

Layout: ``home/threads/<thread_id>.jsonl`` (flat, so a thread is found from its id alone
even when the index is gone) and ``home/state.sqlite``. The rollouts are the truth; the
index is refreshed from them whenever it is found missing, stale or corrupt.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from nbagent.protocol.items import Item, UserMessage
from nbagent.protocol.rollout import ItemRecord, NameRecord, RolloutLine, RolloutLineAdapter, ThreadMeta, TurnRecord
from nbagent.store.index import ThreadIndex, ThreadStats, ThreadSummary, summarize_rollout
from nbagent.store.rollout import RolloutWriter, read_rollout

__all__ = ["INDEX_FILE", "THREADS_DIR", "LoadedThread", "ThreadNotFound", "ThreadStore"]

log = logging.getLogger(__name__)

THREADS_DIR = "threads"
INDEX_FILE = "state.sqlite"
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")
_T = TypeVar("_T")
START_FLUSH_INTERVAL = 1.0
"""A turn start within this many seconds of the last index write is not written on its own.

Every other turn record, name record, creation and close writes the row; an index write
costs ~70 µs, which back-to-back scripted turns would otherwise pay twice per turn."""


class ThreadNotFound(KeyError):
    """No rollout for that thread id."""


@dataclass
class LoadedThread:
    """A thread rebuilt from its rollout: what resume needs."""

    meta: ThreadMeta
    items: list[Item]
    turns: list[TurnRecord]
    name: str | None
    """Latest ``NameRecord`` wins, else the name given at creation."""
    warnings: list[str] = field(default_factory=list)
    path: Path | None = None

    @property
    def thread_id(self) -> str:
        return self.meta.thread_id

    @property
    def open_turn_id(self) -> str | None:
        """A turn that started and never ended (the process died); the core closes it."""
        ended: set[str] = set()
        for t in reversed(self.turns):
            if t.status != "started":
                ended.add(t.turn_id)
            elif t.turn_id not in ended:
                return t.turn_id
        return None


class _Tracker:
    """Keeps one thread's index row current from a writer, without a write per item."""

    def __init__(self, store: ThreadStore, path: Path, stats: ThreadStats | None) -> None:
        self.store = store
        self.path = path
        self.stats = stats
        self.redacts = False
        self._last_flush = float("-inf")

    def on_line(self, line: RolloutLine, data: bytes) -> None:
        is_item = isinstance(line, ItemRecord)
        if self.redacts and (not is_item or isinstance(line.item, UserMessage)):  # type: ignore[union-attr]
            # Index values (name, preview) must be what the rollout holds: redacted.
            try:
                line = RolloutLineAdapter.validate_json(data)
            except ValueError:
                return
        if isinstance(line, ThreadMeta):
            if self.stats is None:
                self.stats = ThreadStats(line, self.path)
        elif self.stats is not None:
            self.stats.feed(line)
        if is_item:
            return
        if (
            isinstance(line, TurnRecord)
            and line.status == "started"
            and time.monotonic() - self._last_flush < START_FLUSH_INTERVAL
        ):
            return  # back-to-back turns: the end record a moment ago is fresh enough
        self.flush()

    def flush(self) -> None:
        stats = self.stats
        if stats is not None:
            self._last_flush = time.monotonic()
            self.store._index_call(lambda ix: ix.update_progress(stats.summary()), None)


class ThreadStore:
    """Create, append to, load, find and list threads under ``home``.

    Never fatal on a bad index: problems become entries of ``warnings`` and the index is
    rebuilt from the rollouts.
    """

    def __init__(self, home: Path | str) -> None:
        self.home = Path(home).expanduser()
        self.threads_dir = self.home / THREADS_DIR
        self.threads_dir.mkdir(parents=True, exist_ok=True)
        self.warnings: list[str] = []
        self._lock = threading.RLock()
        self._stats_cache: dict[str, tuple[int, int, ThreadStats]] = {}
        self._index = ThreadIndex(self.home / INDEX_FILE)
        self._take_index_warnings()
        if self._index.needs_rebuild:
            self._rebuild_quietly()

    # -- index plumbing ------------------------------------------------------------------

    def _take_index_warnings(self) -> None:
        self.warnings.extend(self._index.warnings)
        self._index.warnings.clear()

    def _rebuild_quietly(self) -> None:
        try:
            self.rebuild_index()
        except sqlite3.Error as e:
            self.warnings.append(f"index rebuild failed: {e}")

    def _index_call(self, fn: Callable[[ThreadIndex], _T], default: _T) -> _T:
        """Run an index operation; a busy index gives ``default``, a corrupt one is rebuilt."""
        with self._lock:
            try:
                return fn(self._index)
            except sqlite3.OperationalError as e:
                self.warnings.append(f"index operation failed: {e}")
                return default
            except sqlite3.DatabaseError as e:
                self.warnings.append(f"index corrupt ({e}); rebuilding it from the rollouts")
                self._index.reset()
                self._take_index_warnings()
                self._rebuild_quietly()
                try:
                    return fn(self._index)
                except sqlite3.Error:
                    return default

    def close(self) -> None:
        self._index.close()

    def __enter__(self) -> ThreadStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- paths ---------------------------------------------------------------------------

    @staticmethod
    def _check_id(thread_id: str) -> None:
        if not _SAFE_ID.fullmatch(thread_id):
            raise ValueError(f"thread id {thread_id!r} is not a safe file name ([A-Za-z0-9_.-], not starting with '.')")

    def path_for(self, thread_id: str) -> Path:
        """Where a new thread's rollout goes."""
        self._check_id(thread_id)
        return self.threads_dir / f"{thread_id}.jsonl"

    def _rollout_files(self) -> list[Path]:
        return sorted(self.threads_dir.rglob("*.jsonl"))

    def _find_path(self, thread_id: str) -> Path | None:
        """The rollout of a thread: index row, then the usual place, then a scan."""
        if not _SAFE_ID.fullmatch(thread_id):
            return None
        row = self._index_call(lambda ix: ix.get(thread_id), None)
        if row is not None and Path(row.rollout_path).is_file():
            return Path(row.rollout_path)
        p = self.threads_dir / f"{thread_id}.jsonl"
        if p.is_file():
            return p
        for f in self.threads_dir.rglob(f"{thread_id}.jsonl"):
            return f
        return None

    # -- writing -------------------------------------------------------------------------

    def _writer(self, path: Path, stats: ThreadStats | None, secrets: Iterable[str], create: bool) -> RolloutWriter:
        tracker = _Tracker(self, path, stats)
        writer = RolloutWriter(path, secrets, on_line=tracker.on_line, on_close=tracker.flush, create=create)
        tracker.redacts = bool(writer.redactor)
        return writer

    def create(self, meta: ThreadMeta, secrets: Iterable[str] = ()) -> RolloutWriter:
        """Start a thread: its rollout gets ``meta`` as first line and the index a row.

        Raises ``FileExistsError`` if the thread id is taken.
        """
        path = self.path_for(meta.thread_id)
        writer = self._writer(path, None, secrets, create=True)
        writer.append(meta)
        return writer

    def open_writer(self, thread_id: str, secrets: Iterable[str] = ()) -> RolloutWriter:
        """Append to an existing thread (resume). Raises ``ThreadNotFound``."""
        path = self._find_path(thread_id)
        if path is None:
            raise ThreadNotFound(thread_id)
        stats = self._cached_stats(thread_id, path)
        if stats is None:
            stats, _ = summarize_rollout(path)
            if stats is None:
                raise ThreadNotFound(f"{thread_id}: rollout {path} has no valid thread_meta line")
        return self._writer(path, stats, secrets, create=False)

    def _cached_stats(self, thread_id: str, path: Path) -> ThreadStats | None:
        """Stats from the last ``load`` if the file has not changed since (resume = load + open)."""
        cached = self._stats_cache.pop(thread_id, None)
        if cached is None:
            return None
        size, mtime, stats = cached
        st = path.stat()
        if st.st_size == size and st.st_mtime_ns == mtime and stats.path == path:
            return stats
        return None

    # -- reading -------------------------------------------------------------------------

    def load(self, thread_id: str) -> LoadedThread:
        """Rebuild a thread from its rollout. Raises ``ThreadNotFound``.

        Also heals the thread's index row, which a crash may have left behind the rollout.
        """
        path = self._find_path(thread_id)
        if path is None:
            raise ThreadNotFound(thread_id)
        st = path.stat()
        lines, warnings = read_rollout(path)
        if not lines or not isinstance(lines[0], ThreadMeta):
            raise ThreadNotFound(f"{thread_id}: rollout {path} has no valid thread_meta first line")
        meta = lines[0]
        items: list[Item] = []
        turns: list[TurnRecord] = []
        name = meta.name
        stats = ThreadStats(meta, path)
        for line in lines[1:]:
            stats.feed(line)
            if isinstance(line, ItemRecord):
                items.append(line.item)
            elif isinstance(line, TurnRecord):
                turns.append(line)
            elif isinstance(line, NameRecord):
                name = line.name
            else:
                warnings.append(f"{path}: extra thread_meta line ignored")
        self._stats_cache[meta.thread_id] = (st.st_size, st.st_mtime_ns, stats)
        summary = stats.summary()
        if self._index_call(lambda ix: ix.get(meta.thread_id), None) != summary:
            self._index_call(lambda ix: ix.upsert(summary), None)
        return LoadedThread(meta=meta, items=items, turns=turns, name=name, warnings=warnings, path=path)

    def resolve(self, id_or_name: str) -> str | None:
        """Exact id, then exact name (most recent thread of that name), then a unique id prefix."""
        key = id_or_name.strip()
        if not key:
            return None
        found = self._lookup(key)
        if found is None:
            self._sync()  # the index may be stale: pick up rollouts it does not know
            found = self._lookup(key)
        return found

    def _lookup(self, key: str) -> str | None:
        row = self._index_call(lambda ix: ix.get(key), None)
        if row is not None and Path(row.rollout_path).is_file():
            return row.id
        if _SAFE_ID.fullmatch(key) and (self.threads_dir / f"{key}.jsonl").is_file():
            return key
        row = self._index_call(lambda ix: ix.by_name(key), None)
        if row is not None and Path(row.rollout_path).is_file():
            return row.id
        ids = set(self._index_call(lambda ix: ix.ids_with_prefix(key, limit=2), []))
        if len(ids) == 1:
            return ids.pop()
        return None

    def _sync(self) -> None:
        """Index rollouts the index lacks and drop rows whose rollout is gone."""
        known = self._index_call(lambda ix: ix.paths(), {})
        files = {str(p): p for p in self._rollout_files()}
        for p, tid in known.items():
            if p not in files:
                self._index_call(lambda ix, tid=tid: ix.delete(tid), None)
        for p, path in files.items():
            if p in known:
                continue
            stats, warnings = summarize_rollout(path)
            if stats is not None:
                self._index_call(lambda ix, s=stats.summary(): ix.upsert(s), None)

    def list_threads(self, limit: int = 50) -> list[ThreadSummary]:
        """Newest (last updated) first."""
        self._sync()
        return self._index_call(lambda ix: ix.list(limit), [])

    def rebuild_index(self) -> int:
        """Drop the index and recreate it from the rollouts alone; returns the thread count."""
        summaries: dict[str, ThreadSummary] = {}
        for path in self._rollout_files():
            stats, warnings = summarize_rollout(path)
            self.warnings.extend(w for w in warnings if "not indexed" in w)
            if stats is None:
                continue
            s = stats.summary()
            prev = summaries.get(s.id)
            if prev is not None:
                self.warnings.append(f"thread {s.id} has two rollouts ({prev.rollout_path}, {s.rollout_path})")
                if Path(s.rollout_path) != self.threads_dir / f"{s.id}.jsonl":
                    continue
            summaries[s.id] = s
        self._stats_cache.clear()
        with self._lock:
            return self._index.replace_all(summaries.values())
