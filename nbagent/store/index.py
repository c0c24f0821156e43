"""The thread index: ``state.sqlite`` (WAL), for listing and resolving threads quickly.

The index holds no fact of its own: every row is derived from one rollout by ``ThreadStats``,
both live (fed line by line by the writer) and on rebuild (fed from the file), so the two
agree by construction. Losing or corrupting it costs a rebuild, never data.

Beside the rows it keeps the identity and modification time of every directory its last scan of
the rollouts read (``scanned``): adding, removing or renaming a rollout changes its directory's
time, so while no time changed the rows are known to cover exactly the files, and a listing needs
no scan (see ``ThreadStore.list_threads``).
"""

from __future__ import annotations

import builtins
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import BaseModel

from nbagent.protocol.items import UserMessage
from nbagent.protocol.rollout import ItemRecord, NameRecord, RolloutLine, ThreadMeta, TurnRecord

__all__ = [
    "PREVIEW_CHARS",
    "SCHEMA_VERSION",
    "IndexCorrupt",
    "Scanned",
    "ThreadIndex",
    "ThreadStats",
    "ThreadSummary",
    "summarize_rollout",
    "thread_meta",
]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
PREVIEW_CHARS = 200
_SQLITE_MAX_INT = 2**63 - 1
"""The largest number SQLite takes as a LIMIT; a larger one (`threads --limit 9223372036854775807`) means all."""

_COLUMNS = (
    "id",
    "name",
    "created_at",
    "updated_at",
    "model",
    "cwd",
    "notebook_path",
    "turns",
    "items",
    "first_prompt",
    "last_prompt",
    "rollout_path",
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY,
    name TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    model TEXT NOT NULL DEFAULT '',
    cwd TEXT NOT NULL DEFAULT '',
    notebook_path TEXT,
    turns INTEGER NOT NULL DEFAULT 0,
    items INTEGER NOT NULL DEFAULT 0,
    first_prompt TEXT,
    last_prompt TEXT,
    rollout_path TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS threads_name ON threads(name, updated_at);
CREATE INDEX IF NOT EXISTS threads_updated ON threads(updated_at);
"""

_SCANNED = """
CREATE TABLE IF NOT EXISTS scanned (
    dir TEXT PRIMARY KEY,
    dev INTEGER NOT NULL,
    ino INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL
)
"""

Scanned = dict[str, tuple[int, int, int]]
"""Directory -> (device, inode, mtime in ns) as the last scan of the rollouts found it."""

_VALUES = f"INTO threads ({','.join(_COLUMNS)}) VALUES ({','.join('?' * len(_COLUMNS))})"
_INSERT = f"INSERT OR REPLACE {_VALUES}"
_INSERT_NEW = f"INSERT OR IGNORE {_VALUES}"


def _schema_matches(conn: sqlite3.Connection) -> bool:
    """This version's table, with exactly its columns (an older or foreign ``threads`` is not)."""
    if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
        return False
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='threads'").fetchone():
        return False
    return {row[1] for row in conn.execute("PRAGMA table_info(threads)")} == set(_COLUMNS)


def _in_transaction(conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], None]) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        work(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


class IndexCorrupt(sqlite3.DatabaseError):
    """The file is not a database, or not a sound one: only then is it set aside."""


def _is_corrupt(error: sqlite3.Error) -> bool:
    """Corruption, as opposed to a full disk, a read-only file or a lock: those leave the file be."""
    return isinstance(error, IndexCorrupt) or getattr(error, "sqlite_errorname", "") in ("SQLITE_CORRUPT", "SQLITE_NOTADB")


def _drop(conn: sqlite3.Connection, name: str) -> None:
    for (kind,) in conn.execute("SELECT type FROM sqlite_master WHERE name=?", (name,)).fetchall():
        conn.execute(f"DROP {'VIEW' if kind == 'view' else 'TABLE'} {name}")


def _create_scanned(conn: sqlite3.Connection) -> None:
    """An empty ``scanned`` (whatever it was): the rows were never checked against the files."""
    _drop(conn, "scanned")
    conn.execute(_SCANNED)


def _scanned_matches(conn: sqlite3.Connection) -> bool:
    """An index written by a version without ``scanned`` lacks it (its rows are still good); a
    view or other columns in its place are replaced, since a scan must be able to record itself."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='scanned'").fetchone():
        return False
    return {row[1] for row in conn.execute("PRAGMA table_info(scanned)")} == {"dir", "dev", "ino", "mtime_ns"}


def _create_schema(conn: sqlite3.Connection) -> None:
    """Drop and create the tables inside the caller's transaction (whatever ``threads`` was)."""
    _drop(conn, "threads")
    for stmt in _SCHEMA.split(";"):
        if stmt.strip():
            conn.execute(stmt)
    _create_scanned(conn)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


class ThreadSummary(BaseModel):
    """One row of the index: what a thread list shows."""

    id: str
    name: str | None = None
    created_at: float
    updated_at: float
    model: str = ""
    cwd: str = ""
    notebook_path: str | None = None
    turns: int = 0
    items: int = 0
    first_prompt: str | None = None
    last_prompt: str | None = None
    rollout_path: str


class ThreadStats:
    """Running summary of a rollout; the single definition of every index column."""

    __slots__ = ("meta", "name", "turns", "items", "first_prompt", "last_prompt", "updated_at", "path")

    def __init__(self, meta: ThreadMeta, path: Path) -> None:
        self.meta = meta
        self.path = path
        self.name: str | None = meta.name
        self.turns = 0
        self.items = 0
        self.first_prompt: str | None = None
        self.last_prompt: str | None = None
        self.updated_at = meta.created_at

    def feed(self, line: RolloutLine) -> None:
        if isinstance(line, ItemRecord):
            self.items += 1
            item = line.item
            if item.created_at > self.updated_at:
                self.updated_at = item.created_at
            if isinstance(item, UserMessage):
                self.last_prompt = item.text[:PREVIEW_CHARS]
                if self.first_prompt is None:
                    self.first_prompt = self.last_prompt
        elif isinstance(line, TurnRecord):
            if line.status == "started":
                self.turns += 1
            if line.at > self.updated_at:
                self.updated_at = line.at
        elif isinstance(line, NameRecord):
            self.name = line.name
        # A second ThreadMeta is not expected; the first one defines the thread.

    def summary(self) -> ThreadSummary:
        m = self.meta
        return ThreadSummary(
            id=m.thread_id,
            name=self.name,
            created_at=m.created_at,
            updated_at=self.updated_at,
            model=m.model,
            cwd=m.cwd,
            notebook_path=m.notebook_path,
            turns=self.turns,
            items=self.items,
            first_prompt=self.first_prompt,
            last_prompt=self.last_prompt,
            rollout_path=str(self.path),
        )

    @classmethod
    def from_lines(cls, lines: list[RolloutLine], path: Path, warnings: list[str]) -> ThreadStats | None:
        """``None`` when the rollout holds no thread (see ``thread_meta``)."""
        found = thread_meta(lines, path, warnings)
        if found is None:
            return None
        stats = cls(found[0], path)
        for line in found[1]:
            stats.feed(line)
        return stats


def thread_meta(lines: list[RolloutLine], path: Path, warnings: list[str]) -> tuple[ThreadMeta, list[RolloutLine]] | None:
    """The thread's meta and the lines after it.

    The file's name is the thread's id: a meta naming another thread (a copy of a rollout, or a
    file planted to take over a thread's index row) is read as the thread its name says, with a
    warning, so reading one file never re-points another thread's history. A first line that is
    not a readable meta (garbage, a hand edit, a torn write) costs what only it held (name at
    creation, cwd, notebook), never the thread: the meta is rebuilt from the file name and the
    first records, with a warning. ``None`` when no line is left.
    """
    if lines and isinstance(lines[0], ThreadMeta):
        meta = lines[0]
        if meta.thread_id != path.stem:
            warnings.append(f"{path}:1: thread_meta names thread {meta.thread_id!r}, the file's name {path.stem!r}; "
                            f"read as thread {path.stem!r} (a copied rollout is a thread of its own)")
            meta = meta.model_copy(update={"thread_id": path.stem})
        return meta, lines[1:]
    if not lines:
        warnings.append(f"{path}: no readable line; not a thread")
        return None
    first_turn = next((ln for ln in lines if isinstance(ln, TurnRecord)), None)
    first = lines[0]
    created = first.at if isinstance(first, TurnRecord) else first.item.created_at if isinstance(first, ItemRecord) else None
    meta = ThreadMeta(thread_id=path.stem, model=first_turn.model if first_turn else "")
    if created is not None:
        meta.created_at = created
    warnings.append(f"{path}:1: not a thread_meta line; the thread was rebuilt from the other lines "
                    "(its name at creation, cwd and notebook path are lost)")
    return meta, lines


def summarize_rollout(path: Path) -> tuple[ThreadStats | None, list[str]]:
    """Stats of one rollout file, with the reader's warnings."""
    from nbagent.store.rollout import read_rollout

    lines, warnings = read_rollout(path)
    return ThreadStats.from_lines(lines, path, warnings), warnings


class ThreadIndex:
    """A thin, thread-safe wrapper over the SQLite index.

    ``needs_rebuild`` is set when the file was missing, of another schema, or corrupt (then moved
    aside to ``state.sqlite.corrupt``); the owner then rebuilds from rollouts. A file that cannot
    be used for another reason (a full disk, no write permission) is left as it is and the index
    lives in memory this time.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.warnings: list[str] = []
        self.needs_rebuild = False
        self._lock = threading.RLock()
        self._conn = self._open()

    # -- opening and recovery ------------------------------------------------------------

    def _connect(self, target: str) -> sqlite3.Connection:
        conn = sqlite3.connect(target, timeout=5.0, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA busy_timeout=5000")
            if target != ":memory:":
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
            ok = conn.execute("PRAGMA quick_check").fetchone()
            if not ok or ok[0] != "ok":
                raise IndexCorrupt(f"quick_check: {ok[0] if ok else 'no answer'}")
            if not _schema_matches(conn):
                _in_transaction(conn, _create_schema)
                self.needs_rebuild = True
            elif not _scanned_matches(conn):
                _in_transaction(conn, _create_scanned)
        except BaseException:
            conn.close()
            raise
        return conn

    def _open(self) -> sqlite3.Connection:
        if self.path is None:
            return self._connect(":memory:")
        try:
            return self._connect(str(self.path))
        except sqlite3.DatabaseError as e:
            if _is_corrupt(e):
                return self._recover(e)
            # Busy (another process mid-rebuild), a full disk, a read-only file: the file may be
            # sound, so it stays; work from memory this time.
            self.warnings.append(f"{self.path}: index unavailable ({e}); using an in-memory index this time")
            return self._connect(":memory:")

    def _recover(self, error: Exception) -> sqlite3.Connection:
        assert self.path is not None
        msg = f"{self.path}: index unusable ({error}); rebuilding it from the rollouts"
        log.warning(msg)
        self.warnings.append(msg)
        self.needs_rebuild = True
        try:
            os.replace(self.path, self.path.with_name(self.path.name + ".corrupt"))
            for suffix in ("-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
            return self._connect(str(self.path))
        except (OSError, sqlite3.DatabaseError) as e:
            self.warnings.append(f"{self.path}: cannot recreate the index ({e}); using an in-memory index")
            return self._connect(":memory:")

    def reset(self) -> None:
        """Drop the connection and reopen (recovering a corrupt file); used after a DatabaseError."""
        with self._lock:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = self._open()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- writes --------------------------------------------------------------------------

    def upsert(self, s: ThreadSummary) -> None:
        with self._lock:
            self._conn.execute(_INSERT, _row(s))

    def update_progress(self, s: ThreadSummary) -> None:
        """The columns a writer changes (cheaper than a replace); inserts the row if missing."""
        with self._lock:
            cur = self._conn.execute(
                "UPDATE threads SET name=?, updated_at=?, turns=?, items=?, first_prompt=?, last_prompt=? WHERE id=?",
                (s.name, s.updated_at, s.turns, s.items, s.first_prompt, s.last_prompt, s.id),
            )
            if cur.rowcount == 0:
                self.upsert(s)

    def replace_all(self, summaries: Iterable[ThreadSummary], scanned: Scanned | None = None) -> int:
        """Drop and recreate the table with exactly these rows, in one transaction; ``scanned`` is
        what the scan that found them read."""
        rows = [_row(s) for s in summaries]

        def work(c: sqlite3.Connection) -> None:
            _create_schema(c)
            c.executemany(_INSERT, rows)
            _record_scanned(c, scanned or {})

        with self._lock:
            _in_transaction(self._conn, work)
            self.needs_rebuild = False
            return self._conn.execute("SELECT COUNT(*) FROM threads").fetchone()[0]

    def apply_scan(self, found: Iterable[ThreadSummary], gone: Iterable[tuple[str, str]], scanned: Scanned) -> None:
        """In one transaction: rows for rollouts the index lacked, none for ``gone`` (id, path)
        rollouts, and what the scan read. A row another process wrote meanwhile is kept: its
        writer knows better than a scan of a file it is still writing."""

        def work(c: sqlite3.Connection) -> None:
            c.executemany("DELETE FROM threads WHERE id=? AND rollout_path=?", gone)
            c.executemany(_INSERT_NEW, [_row(s) for s in found])
            _record_scanned(c, scanned)

        with self._lock:
            _in_transaction(self._conn, work)

    # -- reads ---------------------------------------------------------------------------

    def _rows(self, sql: str, params: Iterable[object] = ()) -> list[ThreadSummary]:
        with self._lock:
            cur = self._conn.execute(f"SELECT {','.join(_COLUMNS)} FROM threads {sql}", tuple(params))
            return [ThreadSummary(**dict(zip(_COLUMNS, r, strict=True))) for r in cur.fetchall()]

    def get(self, thread_id: str) -> ThreadSummary | None:
        rows = self._rows("WHERE id=?", (thread_id,))
        return rows[0] if rows else None

    def by_name(self, name: str) -> ThreadSummary | None:
        """The most recently updated thread of that name."""
        rows = self._rows("WHERE name=? ORDER BY updated_at DESC, created_at DESC LIMIT 1", (name,))
        return rows[0] if rows else None

    def ids_with_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        with self._lock:
            cur = self._conn.execute(
                "SELECT id FROM threads WHERE substr(id, 1, ?)=? LIMIT ?", (len(prefix), prefix, limit)
            )
            return [r[0] for r in cur.fetchall()]

    def list(self, limit: int | None = 50) -> list[ThreadSummary]:
        """Newest first; ``None``, or a limit past SQLite's 64-bit integers, is every thread."""
        every = limit is None or limit > _SQLITE_MAX_INT
        return self._rows("ORDER BY updated_at DESC, created_at DESC LIMIT ?", (-1 if every else limit,))

    def all(self) -> builtins.list[ThreadSummary]:
        return self._rows("ORDER BY id")

    def paths(self) -> dict[str, str]:
        """rollout path -> thread id, for syncing with the files on disk."""
        with self._lock:
            return {p: i for i, p in self._conn.execute("SELECT id, rollout_path FROM threads").fetchall()}

    def scanned(self) -> Scanned:
        """What the last scan of the rollouts read (empty: never scanned, or since recreated)."""
        with self._lock:
            return {d: (dev, ino, m) for d, dev, ino, m in self._conn.execute("SELECT dir, dev, ino, mtime_ns FROM scanned")}


def _row(s: ThreadSummary) -> list[object]:
    row = s.model_dump()
    return [row[c] for c in _COLUMNS]


def _record_scanned(c: sqlite3.Connection, scanned: Scanned) -> None:
    c.execute("DELETE FROM scanned")
    c.executemany("INSERT INTO scanned (dir, dev, ino, mtime_ns) VALUES (?, ?, ?, ?)",
                  [(d, *fp) for d, fp in scanned.items()])
