"""Undo a turn: put back the files its ``GhostSnapshot`` says it changed.

Unlike Codex, which checks out the whole snapshot, only the files the turn changed are
touched, one by one, and only when it is safe: a later turn (not undone) that changed one of
them must be undone first, and a file whose content is no longer what the turn left (a person
edited it since) is named and kept unless the undo is forced. Nothing is restored when either
refusal applies, so an undo is all of the turn's files or none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from nbagent.checkpoint.ghost import GhostRepo
from nbagent.protocol import FileChange, GhostSnapshot, Item, UndoItem


class UndoRefused(Exception):
    """Why the undo did nothing; the message names the later turn or the changed files."""


@dataclass(frozen=True)
class UndoPlan:
    snapshot: GhostSnapshot
    changed_since: list[str]
    """Files whose content is not what the turn left (a person changed them)."""


def _repo(snapshot: GhostSnapshot) -> GhostRepo:
    git_dir = Path(snapshot.git_dir)
    return GhostRepo(git_dir, Path(snapshot.work_tree), git_dir / "nbagent-undo-index", seed=None)


_BLOB = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def _checked(snapshot: GhostSnapshot) -> None:
    """Refuse a snapshot whose record would write outside its work tree or hand git an option:
    the rollout is read back from disk, so what it says is checked before anything is touched."""
    top = Path(snapshot.work_tree).resolve()
    if not _BLOB.fullmatch(snapshot.commit):
        raise UndoRefused(f"turn {snapshot.turn_id}'s checkpoint names no commit ({snapshot.commit[:60]!r})")
    for change in snapshot.changes:
        parts = PurePosixPath(change.path).parts
        if not parts or change.path.startswith("/") or ".." in parts or ".git" in parts or "\0" in change.path:
            raise UndoRefused(f"turn {snapshot.turn_id}'s checkpoint names a path outside its workspace: {change.path[:200]!r}")
        if not (top / change.path).parent.resolve().is_relative_to(top):
            raise UndoRefused(f"{change.path} now lies outside the workspace (a folder on its way is a link): nothing restored")
        for blob in (change.before, change.after):
            if blob is not None and not _BLOB.fullmatch(blob):
                raise UndoRefused(f"turn {snapshot.turn_id}'s checkpoint names no content for {change.path}: {blob[:60]!r}")


def turns_undone(items: Sequence[Item]) -> set[str]:
    """The turns undone whole; an undo of one call (a cell's badge) leaves its turn undoable."""
    return {i.undone_turn_id for i in items if isinstance(i, UndoItem) and i.call_id is None}


def short(paths: Sequence[str], limit: int = 10) -> str:
    more = f" and {len(paths) - limit} more" if len(paths) > limit else ""
    return ", ".join(paths[:limit]) + more


def plan_undo(items: Sequence[Item], turn_id: str | None = None, *, force: bool = False,
              keep: Sequence[str] = ()) -> UndoPlan:
    """The turn to undo and what stands in the way, or ``UndoRefused`` saying why not; the files
    in ``keep`` are left as they are."""
    undone = turns_undone(items)
    snapshots = [i for i in items if isinstance(i, GhostSnapshot)]
    if turn_id is None:
        left = [s for s in snapshots if s.turn_id not in undone]
        if not left:
            raise UndoRefused("no turn of this thread changed workspace files that are not undone yet")
        target = left[-1]
    else:
        found = [s for s in snapshots if s.turn_id == turn_id]
        if not found:
            raise UndoRefused(f"turn {turn_id} changed no workspace file that a checkpoint kept; nothing to undo")
        if turn_id in undone:
            raise UndoRefused(f"turn {turn_id} is undone already")
        target = found[0]
    _checked(target)
    later_ones = snapshots[snapshots.index(target) + 1:]
    target = target.model_copy(update={"changes": [c for c in target.changes if c.path not in keep]})
    paths = {c.path for c in target.changes}
    for later in later_ones:
        shared = sorted(paths & {c.path for c in later.changes})
        if later.turn_id not in undone and shared:
            raise UndoRefused(f"turn {later.turn_id}, later, changed {short(shared)} too: undo it first")
    now = _repo(target).current([c.path for c in target.changes])
    changed_since = [c.path for c in target.changes if now[c.path] != c.after]
    if changed_since and not force:
        raise UndoRefused(
            f"{short(changed_since)} changed after turn {target.turn_id}; undo would overwrite it, so nothing was "
            "restored (undo with --force to overwrite)"
        )
    return UndoPlan(target, changed_since)


def _said(change: FileChange) -> str:
    if change.before is None:
        return f"{change.path} (created by the turn, removed)"
    if change.after is None:
        return f"{change.path} (deleted by the turn, put back)"
    return f"{change.path} (restored)"


def undo_turn(plan: UndoPlan, cells: Sequence[str] = ()) -> UndoItem:
    """Restore the plan's files; the item says what was done (with the ``cells`` the front end
    restored), in words the model reads."""
    snapshot = plan.snapshot
    repo = _repo(snapshot)
    for change in snapshot.changes:
        repo.restore(change)
    restored = [c.path for c in snapshot.changes]
    item = cells_undone(snapshot.turn_id or "", cells)
    if restored:
        item.text += (f" The workspace files it changed are back as they were before it: "
                      f"{', '.join(_said(c) for c in snapshot.changes)}. Treat that turn's file changes as not made.")
    if plan.changed_since:
        item.text += f" These had been changed after that turn and were overwritten: {', '.join(plan.changed_since)}."
    if snapshot.not_saved:
        item.text += f" Not saved, so not restored (too large): {short(snapshot.not_saved)}."
    return item.model_copy(update={"restored": restored, "overwritten": plan.changed_since})


def cells_undone(turn_id: str, cells: Sequence[str], call_id: str | None = None) -> UndoItem:
    """The record of an undo of ``turn_id`` (or of its call ``call_id`` only) whose ``cells`` the
    front end restored (files: none yet)."""
    if call_id is not None:
        text = (f"[undo] The user undid call {call_id} of turn {turn_id}: the cell it changed is back as it was "
                f"before it: {', '.join(cells)}. Treat that change as not made.")
        return UndoItem(undone_turn_id=turn_id, call_id=call_id, cells=list(cells), text=text)
    text = f"[undo] The user undid turn {turn_id}."
    if cells:
        text += f" The notebook cells it changed are back as they were before it: {', '.join(cells)}."
    return UndoItem(undone_turn_id=turn_id, cells=list(cells), text=text)
