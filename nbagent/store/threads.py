"""``ThreadStore``: threads on disk under a home directory, rollouts plus the index.

Layout: ``home/threads/<thread_id>.jsonl`` (flat, so a thread is found from its id alone
even when the index is gone) and ``home/state.sqlite``. The rollouts are the truth; the
index is refreshed from them whenever it is found missing, stale, of another schema or corrupt.
A thread is read and resumed only from its own file: ``<thread_id>.jsonl`` inside
``home/threads``, a regular file reached through no symbolic link. An index row that leads
elsewhere (outside the home, to another thread's file, through a link) is ignored with a warning
and a link is never a rollout, so nothing is read as a thread's history or appended to that is
not that thread's; a resume also refuses a file whose meta names another thread.

A listing is answered by the index alone while the directories of the rollouts keep the times
the last scan recorded (a rollout added, removed or renamed, by any process, changes its
directory's time); otherwise the directories are scanned again, names only, and the index
brought in line.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from nbagent.protocol.items import Item
from nbagent.protocol.ops import OUTSIDE_ENTRY
from nbagent.protocol.rollout import ItemRecord, RolloutLine, ThreadMeta, TurnRecord
from nbagent.store.index import Scanned, ThreadIndex, ThreadStats, ThreadSummary, summarize_rollout, thread_meta
from nbagent.store.lock import LOCK_WAIT_SEC, ThreadLock
from nbagent.store.rollout import RolloutWriter, read_rollout

__all__ = ["INDEX_FILE", "THREADS_DIR", "LoadedThread", "ThreadNotFound", "ThreadStore"]

log = logging.getLogger(__name__)

THREADS_DIR = "threads"
INDEX_FILE = "state.sqlite"
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")
_T = TypeVar("_T")
FLUSH_INTERVAL = 1.0
"""A thread's index row is at most this many seconds behind the turn records of its rollout.

A model turn's end writes the row at once. A turn's start and an outside call's records write
it at once when the last write is older than this, else once at the end of the interval, however
many came in it:
an index write costs ~70 µs, which back-to-back calls (``Session.call_tool``) would otherwise each
pay. Without a running event loop, a start is written with the next record instead. The rollout
line itself is never deferred. A rename, a creation and a close write at once; listing threads in
this process writes what is pending first."""
MTIME_GRAIN_NS = 2_000_000_000
"""A directory changed less than this before it was scanned is scanned again next time: a file
system may keep times this coarse (FAT: 2 s), so a change just after the scan could leave the
same time behind."""


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
    """Keeps one thread's index row current from a writer, without a write per line."""

    def __init__(self, store: ThreadStore, path: Path, stats: ThreadStats | None) -> None:
        self.store = store
        self.path = path
        self.stats = stats
        self._last_flush = float("-inf")
        self._pending: asyncio.TimerHandle | None = None

    def on_line(self, line: RolloutLine, data: bytes) -> None:
        if isinstance(line, ThreadMeta):
            if self.stats is None:
                self.stats = ThreadStats(line, self.path)
        elif self.stats is not None:
            self.stats.feed(line)
        if isinstance(line, ItemRecord):
            return
        wait = self._last_flush + FLUSH_INTERVAL - time.monotonic()
        # A model turn's end is what a listing shows (its prompt, how it ended): written at once,
        # so a process killed right after still leaves it. Starts and outside calls may wait.
        ended_turn = isinstance(line, TurnRecord) and line.status != "started" and line.entry != OUTSIDE_ENTRY
        if not isinstance(line, TurnRecord) or ended_turn or wait <= 0:
            self.flush()
        elif self._pending is None:
            try:
                self._pending = asyncio.get_running_loop().call_later(wait, self.flush)
            except RuntimeError:
                # No event loop to come back on: an end is written now; a start so soon after
                # a write waits for the next one.
                if line.status != "started":
                    self.flush()
            else:
                self.store._deferred.add(self)

    def flush(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
            self.store._deferred.discard(self)
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
        # Made private: the index, checkpoints and server logs beside the 0600 rollouts are the user's alone.
        self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.threads_dir.mkdir(parents=True, exist_ok=True)
        self.warnings: list[str] = []
        self._lock = threading.RLock()
        self._deferred: set[_Tracker] = set()
        """Trackers with an index write waiting for the end of its interval."""
        self._index = ThreadIndex(self.home / INDEX_FILE)
        self._take_index_warnings()
        if self._index.needs_rebuild:
            self._rebuild_quietly()

    # -- index plumbing ------------------------------------------------------------------

    def _warn(self, message: str) -> None:
        """Once per store: a full disk fails every index write the same way."""
        if message not in self.warnings:
            self.warnings.append(message)

    def _take_index_warnings(self) -> None:
        for message in self._index.warnings:
            self._warn(message)
        self._index.warnings.clear()

    def _rebuild_quietly(self) -> None:
        try:
            self.rebuild_index()
        except sqlite3.Error as e:
            self._warn(f"index rebuild failed: {e}")

    def _index_call(self, fn: Callable[[ThreadIndex], _T], default: _T) -> _T:
        """Run an index operation; a busy index gives ``default``, a corrupt one is rebuilt."""
        with self._lock:
            try:
                return fn(self._index)
            except sqlite3.DatabaseError as e:
                if isinstance(e, sqlite3.OperationalError) and not str(e).startswith("no such"):
                    self._warn(f"index operation failed: {e}")  # busy, a full disk: the file is sound
                    return default
                # Corrupt, or changed to another schema under us ("no such column").
                self._warn(f"index unusable ({e}); rebuilding it from the rollouts")
                self._index.reset()
                self._take_index_warnings()
                self._rebuild_quietly()
                try:
                    return fn(self._index)
                except sqlite3.Error:
                    return default

    def _flush_deferred(self) -> None:
        for tracker in list(self._deferred):
            tracker.flush()

    def close(self) -> None:
        self._flush_deferred()
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

    def _not_own(self, path: Path, thread_id: str) -> str | None:
        """Why ``path`` is not ``thread_id``'s rollout; ``None`` when it is: named after the
        thread, inside ``home/threads`` (lexically and once resolved, so no ``..`` and no link on
        the way) and a regular file."""
        real, top = Path(os.path.realpath(path)), self.threads_dir.resolve()
        if not (path.is_relative_to(self.threads_dir) and real.is_relative_to(top)):
            return f"leads outside {self.threads_dir} ({path})"
        if ".." in path.parts:
            return f"is not a plain path inside {self.threads_dir} ({path})"
        if path.name != f"{thread_id}.jsonl":
            return f"is another thread's file ({path})"
        if real != top / path.relative_to(self.threads_dir):
            return f"is a symbolic link ({path} -> {real}); a rollout is read only as a regular file"
        try:
            regular = stat.S_ISREG(os.lstat(path).st_mode)
        except OSError:
            return f"is missing ({path})"
        return None if regular else f"is not a regular file ({path})"

    def _scan(self) -> tuple[list[Path], Scanned]:
        """The rollouts under ``home/threads`` in path order (a link leading out of it is not one;
        a linked directory is not entered), and each directory's identity and time as read.

        Names only: a regular file in the tree is inside it without resolving its path; only a
        link is followed to see where it leads.
        """
        found: list[Path] = []
        scanned: Scanned = {}
        pending = [str(self.threads_dir)]
        while pending:
            directory = pending.pop()
            try:
                st = os.stat(directory)  # before reading: a change during the scan shows next time
                with os.scandir(directory) as it:
                    entries = list(it)
            except OSError:
                continue
            recent = time.time_ns() - st.st_mtime_ns < MTIME_GRAIN_NS
            scanned[directory] = (st.st_dev, st.st_ino, -1 if recent else st.st_mtime_ns)
            for entry in entries:
                try:
                    if entry.is_symlink():
                        if entry.name.endswith(".jsonl"):
                            self._warn(self._linked(Path(entry.path)))
                    elif entry.is_dir():
                        pending.append(entry.path)
                    elif entry.name.endswith(".jsonl") and entry.is_file():
                        found.append(Path(entry.path))
                except OSError:
                    continue
        found.sort()
        return found, scanned

    def _linked(self, path: Path) -> str:
        """The warning for a link among the rollouts: never read, wherever it leads."""
        real = os.path.realpath(path)
        where = "" if Path(real).is_relative_to(self.threads_dir.resolve()) else f", outside {self.threads_dir}"
        return f"{path} links to {real}{where}; ignored (a rollout is read only as a regular file)"

    def _scan_current(self) -> bool:
        """No directory the last scan read has changed since: the index knows every rollout."""
        scanned: dict[str, tuple[int, int, int]] = self._index_call(lambda ix: ix.scanned(), {})
        if str(self.threads_dir) not in scanned:
            return False
        for directory, (dev, ino, mtime_ns) in scanned.items():
            try:
                st = os.stat(directory)
            except OSError:
                return False
            if mtime_ns < 0 or (st.st_dev, st.st_ino, st.st_mtime_ns) != (dev, ino, mtime_ns):
                return False
        return True

    def _row_path(self, row: ThreadSummary | None) -> Path | None:
        """A row's rollout when it is the thread's own file; a row leading elsewhere is ignored."""
        if row is None:
            return None
        path = Path(row.rollout_path)
        problem = self._not_own(path, row.id)
        if problem is None:
            return path
        if os.path.lexists(path):
            self._warn(f"index row of thread {row.id} {problem}; ignored")
        return None

    def _find_path(self, thread_id: str) -> Path:
        """The rollout of a thread: index row, then the usual place, then a scan (which finds no
        link). Raises ``ThreadNotFound``, saying why when the usual place holds something else."""
        if not _SAFE_ID.fullmatch(thread_id):
            raise ThreadNotFound(thread_id)
        found = self._row_path(self._index_call(lambda ix: ix.get(thread_id), None))
        if found is not None:
            return found
        usual = self.threads_dir / f"{thread_id}.jsonl"
        problem = self._not_own(usual, thread_id)
        if problem is None:
            return usual
        found = next((p for p in self._scan()[0] if p.name == usual.name), None)
        if found is not None:
            return found
        if os.path.lexists(usual):
            raise ThreadNotFound(f"thread {thread_id}: its rollout {problem}; not read")
        raise ThreadNotFound(thread_id)

    # -- writing -------------------------------------------------------------------------

    def _writer(
        self, path: Path, stats: ThreadStats | None, secrets: Iterable[str], *, create: bool, lock: ThreadLock
    ) -> RolloutWriter:
        """A writer that holds ``lock`` until it is closed."""
        tracker = _Tracker(self, path, stats)

        def closed() -> None:
            try:
                tracker.flush()
            finally:
                lock.release()

        try:
            return RolloutWriter(path, secrets, on_line=tracker.on_line, on_close=closed, create=create)
        except BaseException:
            lock.release()
            raise

    def create(self, meta: ThreadMeta, secrets: Iterable[str] = ()) -> RolloutWriter:
        """Start a thread: its rollout gets ``meta`` as first line and the index a row.

        Raises ``FileExistsError`` if the thread id is taken, ``RolloutWriteError`` (an
        ``OSError``) if not even the first line could be written: then no file is left.
        """
        path = self.path_for(meta.thread_id)
        lock = ThreadLock(path, meta.thread_id).acquire()
        writer = self._writer(path, None, secrets, create=True, lock=lock)
        try:
            writer.append(meta)
        except BaseException:  # a full disk, a line that cannot be encoded: the lock goes with the writer
            writer.close()
            path.unlink(missing_ok=True)  # a thread that never began leaves no empty rollout
            raise
        return writer

    def open_thread(
        self, thread_id: str, secrets: Iterable[str] = (), *, wait: float = LOCK_WAIT_SEC
    ) -> tuple[LoadedThread, RolloutWriter]:
        """Resume: lock the thread for this process, load it, open its writer.

        Loading under the lock means a turn another process has just ended is seen as ended, not
        taken for one a crash cut off. Raises ``ThreadNotFound``, or ``ThreadBusy`` (naming the
        writer's pid) when another process still writes the thread after ``wait`` seconds.
        """
        path = self._find_path(thread_id)
        lock = ThreadLock(path, thread_id).acquire(wait)
        try:
            loaded, stats = self._load(thread_id, path, resume=True)
        except BaseException:
            lock.release()
            raise
        return loaded, self._writer(path, stats, secrets, create=False, lock=lock)

    # -- reading -------------------------------------------------------------------------

    def load(self, thread_id: str) -> LoadedThread:
        """Rebuild a thread from its rollout (to read it; resuming is ``open_thread``).

        Raises ``ThreadNotFound``. Also heals the thread's index row, which a crash may have left
        behind the rollout.
        """
        return self._load(thread_id, self._find_path(thread_id))[0]

    def _load(self, thread_id: str, path: Path, *, resume: bool = False) -> tuple[LoadedThread, ThreadStats]:
        """``resume``: a file whose meta names another thread (a copy of its rollout) is refused
        rather than read as this one, since the new turns would be appended to it."""
        lines, warnings = read_rollout(path)
        if resume and lines and isinstance(lines[0], ThreadMeta) and lines[0].thread_id != thread_id:
            raise ThreadNotFound(f"thread {thread_id}: its rollout {path} names thread {lines[0].thread_id!r} "
                                 "in its first line (a copy of that thread's rollout?); not resumed")
        found = thread_meta(lines, path, warnings)
        if found is None:
            raise ThreadNotFound(f"{thread_id}: rollout {path} holds no readable line")
        meta, rest = found
        items: list[Item] = []
        turns: list[TurnRecord] = []
        stats = ThreadStats(meta, path)
        feed, add_item, add_turn = stats.feed, items.append, turns.append
        for line in rest:
            feed(line)
            if isinstance(line, ItemRecord):
                add_item(line.item)
            elif isinstance(line, TurnRecord):
                add_turn(line)
            elif isinstance(line, ThreadMeta):
                warnings.append(f"{path}: extra thread_meta line ignored")
        summary = stats.summary()
        if self._index_call(lambda ix: ix.get(meta.thread_id), None) != summary:
            self._index_call(lambda ix: ix.upsert(summary), None)
        loaded = LoadedThread(meta=meta, items=items, turns=turns, name=stats.name, warnings=warnings, path=path)
        return loaded, stats

    def take_warnings(self) -> list[str]:
        """What went wrong with the index or the files since the last call, for a front end to show."""
        taken, self.warnings = self.warnings, []
        return taken

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
        if row is not None and self._row_path(row) is not None:
            return row.id
        if _SAFE_ID.fullmatch(key) and os.path.lexists(self.threads_dir / f"{key}.jsonl"):
            return key  # whatever is there: opening it says what is wrong with it
        row = self._index_call(lambda ix: ix.by_name(key), None)
        if row is not None and self._row_path(row) is not None:
            return row.id
        prefixed: list[str] = self._index_call(lambda ix: ix.ids_with_prefix(key, limit=2), [])
        ids = set(prefixed)
        if len(ids) == 1:
            return ids.pop()
        return None

    def _sync(self) -> None:
        """Unless no rollout came or went since the last scan: index the rollouts the index lacks
        and drop rows whose rollout is gone (or outside)."""
        if self._scan_current():
            return
        known: dict[str, str] = self._index_call(lambda ix: ix.paths(), {})  # before the scan: a row's file predates it
        paths, scanned = self._scan()
        files = {str(p): p for p in paths}
        gone = [(tid, p) for p, tid in known.items() if p not in files]
        found = []
        for p, path in files.items():
            if p in known:
                continue
            stats, warnings = summarize_rollout(path)
            for warning in warnings:
                self._warn(warning)
            if stats is not None:
                found.append(stats.summary())
        self._index_call(lambda ix: ix.apply_scan(found, gone, scanned), None)

    def list_threads(self, limit: int | None = 50) -> list[ThreadSummary]:
        """Newest (last updated) first, ``limit`` of them (``None``: all); another process's new
        thread and a deleted rollout included."""
        self._flush_deferred()
        self._sync()
        return self._index_call(lambda ix: ix.list(limit), [])

    def rebuild_index(self) -> int:
        """Drop the index and recreate it from the rollouts alone; returns the thread count."""
        summaries: dict[str, ThreadSummary] = {}
        paths, scanned = self._scan()
        for path in paths:
            stats, warnings = summarize_rollout(path)
            for warning in warnings:
                self._warn(warning)
            if stats is None:
                continue
            s = stats.summary()
            prev = summaries.get(s.id)
            if prev is not None:
                self._warn(f"thread {s.id} has two rollouts ({prev.rollout_path}, {s.rollout_path})")
                if Path(s.rollout_path) != self.threads_dir / f"{s.id}.jsonl":
                    continue
            summaries[s.id] = s
        with self._lock:
            return self._index.replace_all(summaries.values(), scanned)
