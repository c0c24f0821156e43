"""A turn's checkpoint in the turn loop, and the ``Undo`` op (DESIGN §20).

Before the first call of a turn whose tool may change things (any tool not known to be
read-only), the workspace is snapshot; when the turn ends, what changed is recorded as a
``GhostSnapshot`` item. ``Undo`` puts those files back and records an ``UndoItem``, which the
model reads in its next request.
"""

from __future__ import annotations

import asyncio

from nbagent.checkpoint import GhostError, TurnCheckpoint, UndoRefused, cells_undone, plan_undo, undo_turn
from nbagent.checkpoint.cells import cells_turn
from nbagent.core.approval import known_safe
from nbagent.core.thread import ThreadState
from nbagent.core.turn_context import TurnContext
from nbagent.protocol import GhostSnapshot, ToolSpec, Undo, UndoCompleted, WarningEvent

LIVE_CELLS = "are put back from the notebook itself, open with the extension (%agent undo, or its Undo turn button)"
NOT_SAVED = "the workspace could not be snapshot before this turn's first change, so it cannot be undone"


async def before_change(turn: TurnContext, spec: ToolSpec) -> None:
    """Snapshot the workspace before the turn's first call that may change it; a snapshot that
    fails is a warning (the call still runs), never a failed call."""
    if turn.checkpoints is None or known_safe(spec):
        return
    if turn.state.checkpoint is None:
        turn.state.checkpoint = TurnCheckpoint(turn.checkpoints.workspace, turn.checkpoints.home, turn.thread.id,
                                               turn.turn_id)  # fmt: skip
    try:
        await turn.state.checkpoint.before_change()
    except (GhostError, OSError) as exc:
        if not turn.state.checkpoint_failed:
            turn.state.checkpoint_failed = True
            turn.emit(WarningEvent(message=f"{NOT_SAVED}: {exc}"))


async def settle(turn: TurnContext) -> None:
    """Record what the turn changed (nothing when it changed nothing)."""
    checkpoint = turn.state.checkpoint
    if checkpoint is None or not checkpoint.taken or checkpoint.unchanged():
        return
    try:
        snapshot = await asyncio.shield(checkpoint.settle())
    except asyncio.CancelledError:  # stopped again while it ends: it still closes, unrecorded
        turn.emit(WarningEvent(message="what this turn changed in the workspace was not recorded: it was stopped again"))
        return
    except (GhostError, OSError) as exc:
        turn.emit(WarningEvent(message=f"what this turn changed in the workspace could not be recorded: {exc}"))
        return
    if snapshot is not None:
        snapshot.turn_id = turn.turn_id
        turn.record(snapshot)


async def undo(thread: ThreadState, op: Undo) -> UndoCompleted:
    """Undo ``op.turn_id`` (the latest undoable turn when unset) in ``thread``: its files back,
    an ``UndoItem`` recorded; a refusal says why and changes nothing."""
    items = list(thread.items)
    try:
        if op.call_id is not None or (op.cells and not any(isinstance(i, GhostSnapshot) and i.turn_id == op.turn_id
                                                            for i in items)):  # one call, or a turn of cells only
            item = cells_undone(op.turn_id or "", op.cells, op.call_id)
        else:
            item = await asyncio.to_thread(
                lambda: undo_turn(plan_undo(items, op.turn_id, force=op.force, keep=op.keep), op.cells))
    except UndoRefused as exc:
        said = f"nothing undone: {exc}"
        if not op.cells and (turn := cells_turn(items, op.turn_id)) is not None:
            said += f"; turn {turn} changed notebook cells, which {LIVE_CELLS}"
        return UndoCompleted(success=False, message=said, undone_turn_id=op.turn_id)
    except (GhostError, OSError) as exc:
        return UndoCompleted(success=False, message=f"undo failed: {exc}", undone_turn_id=op.turn_id)
    thread.record(item)
    said = f"undid {f'call {op.call_id} of ' if op.call_id else ''}turn {item.undone_turn_id}: restored {', '.join(item.cells + item.restored)}"
    if item.overwritten:
        said += f"; overwrote changes made after it to {', '.join(item.overwritten)}"
    if notebooks := [path for path in item.restored if path.endswith(".ipynb")]:
        said += f"; an open notebook shows its restored cells once reloaded from disk: {', '.join(notebooks)}"
    if not op.cells and cells_turn(items, item.undone_turn_id) is not None:
        said += f"; the cells it changed in the live notebook are as they are: they {LIVE_CELLS}"
    return UndoCompleted(success=True, message=said, undone_turn_id=item.undone_turn_id, restored=item.restored)
