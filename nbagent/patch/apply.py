"""Apply a parsed patch all or nothing, inside the folders a caller allows.

:func:`plan_patch` reads every file the patch touches and computes what each becomes, writing
nothing: a hunk that does not match, a path outside the allowed folders (after symlinks), into a
``.git`` folder or absolute is a :class:`PatchError` before any file is touched.
:meth:`PatchPlan.commit` then writes: each new content to a temporary file beside its target,
flushed to disk, and only when all are staged renamed over the targets (deletions unlinked);
a failure midway puts back what was already changed, so the files are as before or as the
patch says, never half of it.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from nbagent.patch.diff import line_counts, unified_diff
from nbagent.patch.parse import AddFile, Chunk, DeleteFile, PatchError, UpdateFile, parse_patch
from nbagent.patch.seek import seek_sequence

ChangeKind = Literal["add", "update", "delete", "move"]
PROTECTED = (".git",)
"""Folders a patch never writes into, wherever they are (Codex keeps them read-only too)."""


@dataclass(frozen=True)
class FileChange:
    """What one operation of a patch does to one file."""

    kind: ChangeKind
    path: str
    """As the patch names it (relative to the folder it applies in)."""
    move_path: str | None
    diff: str
    """Unified diff of the old content against the new."""
    old_hash: str | None
    """sha256 of the content before (``None``: the file did not exist)."""
    new_hash: str | None
    """sha256 of the content after (``None``: the file no longer exists)."""

    @property
    def counts(self) -> tuple[int, int]:
        """``(added, removed)`` lines."""
        return line_counts(self.diff)


@dataclass(frozen=True)
class _Original:
    data: bytes | None
    mode: int | None


@dataclass
class PatchPlan:
    """A patch read and checked against the files as they are, not yet written."""

    changes: list[FileChange]
    writes: dict[str, bytes | None]
    """Real path -> its final content (``None``: deleted), in the order first touched."""
    originals: dict[str, _Original] = field(repr=False)

    def summary(self) -> str:
        """Codex's report of an applied patch: one ``A``/``M``/``D`` line per file."""
        marks = {"add": "A", "update": "M", "move": "M", "delete": "D"}
        lines = [f"{marks[c.kind]} {c.move_path or c.path}" for c in self.changes]
        return "Success. Updated the following files:\n" + "\n".join(lines) + "\n"

    def commit(self) -> list[FileChange]:
        """Write every file or none; :class:`PatchError` says what failed (nothing changed)."""
        staged: dict[str, str] = {}
        made: list[str] = []
        done: list[str] = []
        try:
            for real, data in self.writes.items():
                if data is not None:
                    made += _make_parents(real)
                    staged[real] = _stage(real, data, self.originals[real].mode)
            for real, data in self.writes.items():
                if data is None:
                    os.unlink(real)
                else:
                    os.replace(staged.pop(real), real)
                done.append(real)
            for folder in {os.path.dirname(real) for real in self.writes}:
                _fsync_folder(folder)
        except OSError as exc:
            for temp in staged.values():
                _remove(temp)
            for real in reversed(done):
                _restore(real, self.originals[real])
            for folder in reversed(made):
                _rmdir(folder)
            raise PatchError(
                f"could not write {exc.filename or 'a file'}: {exc.strerror or exc}; no file was changed"
            ) from exc
        return self.changes


def apply_patch(
    text: str, cwd: str | Path, roots: Sequence[str | Path], *, denied: Sequence[str | Path] = ()
) -> list[FileChange]:
    """Apply ``text`` (Codex's patch format) in ``cwd``, writing only under ``roots`` and never
    under ``denied``; all files or none."""
    return plan_patch(text, cwd, roots, denied=denied).commit()


def plan_patch(
    text: str, cwd: str | Path, roots: Sequence[str | Path], *, denied: Sequence[str | Path] = ()
) -> PatchPlan:
    """Read ``text``, check every path and hunk, and compute each file's new content."""
    hunks = parse_patch(text)
    if not hunks:
        raise PatchError("No files were modified: the patch has no file operations.")
    places = _Places(str(cwd), roots, denied)
    state: dict[str, bytes | None] = {}
    originals: dict[str, _Original] = {}

    def read(real: str) -> bytes | None:
        if real not in state:
            originals[real] = _read(real)
            state[real] = originals[real].data
        return state[real]

    changes: list[FileChange] = []
    for hunk in hunks:
        if isinstance(hunk, AddFile):
            real = places.real(hunk.path)
            before = read(real)
            state[real] = hunk.contents.encode()
            old = _text(before, hunk.path) if before is not None else ""
            changes.append(_change("add", hunk.path, None, old, hunk.contents, before))
        elif isinstance(hunk, DeleteFile):
            real = places.real(hunk.path)
            before = read(real)
            if before is None:
                raise PatchError(f"Failed to delete file {hunk.path}: it does not exist")
            state[real] = None
            changes.append(_change("delete", hunk.path, None, _text(before, hunk.path, lossy=True), "", before))
        elif isinstance(hunk, UpdateFile):
            real = places.real(hunk.path)
            before = read(real)
            if before is None:
                raise PatchError(f"Failed to read file to update {hunk.path}: it does not exist")
            old = _text(before, hunk.path)
            new = derive(old, hunk.chunks, hunk.path)
            target = places.real(hunk.move_to) if hunk.move_to else real
            if target != real:
                read(target)
                state[real] = None
            state[target] = new.encode()
            kind: ChangeKind = "move" if hunk.move_to else "update"
            changes.append(_change(kind, hunk.path, hunk.move_to, old, new, before))
    writes = {real: state[real] for real in originals if state[real] != originals[real].data}
    return PatchPlan(changes, writes, originals)


def derive(old: str, chunks: Sequence[Chunk], path: str) -> str:
    """``old`` with each hunk's lines replaced, as Codex does it (``compute_replacements``): hunks
    in order, each found after the previous one; every line ends with a newline, ``\\r\\n`` in a
    file whose every line ended so. (Codex drops a file's last line when it is empty and ends
    the lines it adds to a CRLF file with a bare ``\\n``; here neither happens.)"""
    eol = "\r\n" if "\r\n" in old and old.count("\r\n") == old.count("\n") else "\n"  # a CRLF file stays so
    lines = old.split(eol)
    if lines and lines[-1] == "":
        lines.pop()
    replacements: list[tuple[int, int, list[str]]] = []
    index = 0
    for number, chunk in enumerate(chunks, 1):
        if chunk.context is not None:
            at = seek_sequence(lines, [chunk.context], index, False)
            if at is None:
                raise PatchError(
                    _mismatch(path, number, chunk, f"its context line '@@ {chunk.context}' is not in the file")
                )
            index = at + 1
        if not chunk.old:  # only added lines: they go at the end of the file, as in Codex
            at = len(lines) - 1 if lines and lines[-1] == "" else len(lines)
            replacements.append((at, 0, list(chunk.new)))
            continue
        pattern, new = list(chunk.old), list(chunk.new)
        found = seek_sequence(lines, pattern, index, chunk.end_of_file)
        if found is None and pattern[-1] == "":  # a trailing empty line the file may not have
            pattern = pattern[:-1]
            new = new[:-1] if new and new[-1] == "" else new
            found = seek_sequence(lines, pattern, index, chunk.end_of_file)
        if found is None:
            raise PatchError(_mismatch(path, number, chunk, "its lines are not in the file"))
        replacements.append((found, len(pattern), new))
        index = found + len(pattern)
    for at, length, new in sorted(replacements, key=lambda r: r[0], reverse=True):
        lines[at : at + length] = new
    return "".join(line + eol for line in lines)


def _mismatch(path: str, number: int, chunk: Chunk, why: str) -> str:
    first = chunk.context if chunk.context is not None else next((line for line in chunk.old if line.strip()), "")
    return (
        f"Failed to find expected lines in {path}: hunk {number} (line {chunk.line} of the patch, "
        f"starting '{first}') did not match: {why}. Expected:\n" + "\n".join(chunk.old)
        + "\nRead the file again and send the hunk with its lines exactly as they are now."
    )  # fmt: skip


class _Places:
    """Where a patch's paths may point: under a root, after symlinks; never ``.git`` or denied."""

    def __init__(self, cwd: str, roots: Sequence[str | Path], denied: Sequence[str | Path]) -> None:
        self.cwd = os.path.realpath(cwd)
        self.roots = [os.path.realpath(r) for r in roots]
        self.denied = [os.path.realpath(d) for d in denied]

    def real(self, path: str) -> str:
        if not path.strip():
            raise PatchError("a file operation names no path")
        if os.path.isabs(path) or path.startswith("~"):
            raise PatchError(f"{path}: absolute paths are refused; name the file relative to {self.cwd}")
        real = os.path.realpath(os.path.join(self.cwd, path))
        root = next((r for r in self.roots if _under(real, r)), None)
        if root is None:
            through = f" (it resolves to {real})" if os.path.normpath(os.path.join(self.cwd, path)) != real else ""
            allowed = ", ".join(self.roots) or "none"
            raise PatchError(f"{path}: outside the folders this patch may write{through}; allowed: {allowed}")
        if any(part in PROTECTED for part in (*Path(path).parts, *Path(os.path.relpath(real, root)).parts)):
            raise PatchError(f"{path}: files inside .git are never written by a patch")
        if any(_under(real, d) for d in self.denied):
            raise PatchError(f"{path}: this location is hidden from tools and is never written")
        if os.path.isdir(real):
            raise PatchError(f"{path}: is a folder, not a file")
        return real


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _read(real: str) -> _Original:
    try:
        with open(real, "rb") as f:
            return _Original(f.read(), stat.S_IMODE(os.fstat(f.fileno()).st_mode))
    except FileNotFoundError:
        return _Original(None, None)
    except OSError as exc:
        raise PatchError(f"could not read {real}: {exc.strerror or exc}") from exc


def _text(data: bytes, path: str, *, lossy: bool = False) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        if lossy:
            return data.decode("utf-8", "replace")
        raise PatchError(f"{path}: is not UTF-8 text; a patch edits text files only") from None


def _change(kind: ChangeKind, path: str, move_path: str | None, old: str, new: str, before: bytes | None) -> FileChange:
    gone = kind == "delete"
    diff = unified_diff(
        old, new, path if before is not None else "/dev/null", "/dev/null" if gone else (move_path or path)
    )
    old_hash = hashlib.sha256(before).hexdigest() if before is not None else None
    return FileChange(kind, path, move_path, diff, old_hash, None if gone else hashlib.sha256(new.encode()).hexdigest())


def _make_parents(real: str) -> list[str]:
    """Make the folders ``real`` needs; the ones made, outermost first."""
    missing: list[str] = []
    folder = os.path.dirname(real)
    while not os.path.isdir(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    for made in reversed(missing):
        os.mkdir(made)
    return list(reversed(missing))


def _stage(real: str, data: bytes, mode: int | None) -> str:
    fd, temp = tempfile.mkstemp(dir=os.path.dirname(real), prefix=f".{os.path.basename(real)}.", suffix=".patch")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temp, mode if mode is not None else 0o666 & ~_umask())
    except BaseException:
        _remove(temp)
        raise
    return temp


def _umask() -> int:
    """This process's umask, read without setting it (``os.umask`` would, for every thread)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def _restore(real: str, original: _Original) -> None:
    try:
        if original.data is None:
            _remove(real)
        else:
            os.replace(_stage(real, original.data, original.mode), real)
    except OSError:
        pass  # best effort: the error that stopped the commit is the one reported


def _fsync_folder(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _rmdir(folder: str) -> None:
    try:
        os.rmdir(folder)
    except OSError:
        pass
