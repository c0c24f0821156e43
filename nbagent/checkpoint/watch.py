"""Whether a workspace changed since a mark, from the kernel's own file events (Linux inotify),
so a checkpoint that finds nothing changed starts no git process.

A snapshot runs three or four git commands (about 10 ms), which a tool call that changes nothing,
the common case, would pay twice. The kernel queues an event for every write, create, delete,
rename or mode change in a watched folder as the system call happens, so when a tool call
returns, whatever it changed is already in the queue: an empty queue since the mark means
nothing changed. Every folder of the workspace is watched except ``.git`` folders (where the
snapshots themselves write) and the folders a snapshot leaves out anyway.

Conservative by construction: any event at all, a folder created, moved or removed, or a queue
overflow counts as a change (the next snapshot asks git, and re-walks the folders to watch). Where
inotify is missing, runs out of watches or instances, or the workspace has more than
``MAX_FOLDERS`` folders, there is no watcher and every snapshot asks git, as before. Not seen:
writes made by another machine to a network filesystem (NFS, SMB), which raise no local event.
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable
from pathlib import Path

MAX_FOLDERS = 10_000
"""More folders than this and watching costs more to set up than git's snapshot does."""
MAX_WATCHED = 8
"""Workspaces watched at once per process (a server's sessions may each have their own): the
least recently used beyond this is closed, and its snapshots ask git again."""


class ChangeWatch:
    """The folders under ``top`` (but those ``skip`` says no to), watched; a counter that moves
    on every event, read with ``generation()``."""

    def __init__(self, top: Path, skip: Callable[[Path], bool]) -> None:
        from inotify_simple import INotify, flags  # Linux only: the caller falls back to git

        self._top, self._skip = top, skip
        self._INotify = INotify
        self._mask = (flags.CREATE | flags.DELETE | flags.MODIFY | flags.ATTRIB | flags.MOVED_FROM | flags.MOVED_TO
                      | flags.DELETE_SELF | flags.MOVE_SELF | flags.DONT_FOLLOW | flags.ONLYDIR | flags.EXCL_UNLINK)  # fmt: skip
        self._restructure = flags.ISDIR | flags.Q_OVERFLOW | flags.IGNORED | flags.DELETE_SELF | flags.MOVE_SELF
        """A folder created, moved or removed, or events lost: which folders to watch changed."""
        self._lock = threading.Lock()
        self._count = 0
        self._broken = self._stale = False
        self._new()
        try:
            self._watch_all()
        except OSError:
            self._inotify.close()  # its watches count against the user's limit until closed
            raise

    def generation(self, *, wait: bool = True) -> int | None:
        """A number unlike any earlier one when something under ``top`` may have changed since.
        With ``wait=False`` (the event loop asking) it never blocks: ``None`` when the answer
        needs the folders walked again or another thread is reading."""
        if not self._lock.acquire(blocking=wait):
            return None
        try:
            if self._broken:
                self._count += 1
                return self._count
            events = self._inotify.read(timeout=0) if self._queued.poll(0) else ()
            if events:
                self._count += 1
                self._stale = self._stale or any(event.mask & self._restructure for event in events)
            if self._stale:
                if not wait:
                    return None
                try:
                    self._inotify.close()
                    self._new()
                    self._watch_all()
                except OSError:  # grew past what can be watched: every snapshot asks git now
                    self._broken = True
                    self._inotify.close()
            return self._count
        finally:
            self._lock.release()

    def _new(self) -> None:
        """A new inotify instance, and the poll that says whether it has events queued (dearer to
        ask by reading, as ``INotify.read`` does, on every check of a quiet workspace)."""
        self._inotify = self._INotify(nonblocking=True)
        self._queued = select.poll()
        self._queued.register(self._inotify.fileno(), select.POLLIN)

    def close(self) -> None:
        """Stop watching (its watches count against the user's limit): from now on every
        generation is new, so whoever still holds it asks git."""
        with self._lock:
            self._broken = True
            self._inotify.close()

    def _watch_all(self) -> None:
        """Watch every folder with the (new) inotify instance, each before it is read, so what is
        created in it meanwhile is an event; ``OSError`` when there are too many or the user's
        watches run out."""
        pending, folders = [self._top], 0
        while pending:
            folder = pending.pop()
            self._inotify.add_watch(folder, self._mask)
            folders += 1
            if folders > MAX_FOLDERS:
                raise OSError(f"more than {MAX_FOLDERS} folders to watch under {self._top}")
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False) and entry.name != ".git":
                        path = Path(entry.path)
                        if not self._skip(path):
                            pending.append(path)
        self._stale = False


_WATCHES: dict[tuple[Path, tuple[Path, ...], frozenset[str]], ChangeWatch | None] = {}
_WATCHES_LOCK = threading.Lock()


def watch(top: Path, left_out: tuple[Path, ...] = (), names_left_out: frozenset[str] = frozenset()) -> ChangeWatch | None:
    """The one watcher of ``top`` in this process, not looking into the folders ``left_out`` nor
    any folder named in ``names_left_out`` (threads on one workspace share it: an inotify
    instance each would soon use up the user's 128); ``None`` where it cannot be had."""
    key = (top, left_out, names_left_out)

    def skip(path: Path) -> bool:
        return path.name in names_left_out or path in left_out

    with _WATCHES_LOCK:
        if key in _WATCHES:
            _WATCHES[key] = _WATCHES.pop(key)  # the most recently used last
            return _WATCHES[key]
        try:
            _WATCHES[key] = ChangeWatch(top, skip)
        except (ImportError, OSError, AttributeError):  # not Linux, no inotify, limits reached
            _WATCHES[key] = None
        while len(_WATCHES) > MAX_WATCHED:
            oldest = _WATCHES.pop(next(iter(_WATCHES)))
            if oldest is not None:
                oldest.close()
        return _WATCHES[key]
