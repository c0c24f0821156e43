"""A checkpoint per turn and its undo: the workspace files a turn changed, as they were before it
(DESIGN §20). Below the core, over protocol/ only: git does the storing."""

from __future__ import annotations

from nbagent.checkpoint.cells import undoable
from nbagent.checkpoint.ghost import GhostCommit, GhostError, GhostRepo, open_repo
from nbagent.checkpoint.turn import TurnCheckpoint
from nbagent.checkpoint.undo import UndoRefused, cells_undone, plan_undo, undo_turn

__all__ = [
    "GhostCommit",
    "GhostError",
    "GhostRepo",
    "TurnCheckpoint",
    "UndoRefused",
    "cells_undone",
    "open_repo",
    "plan_undo",
    "undo_turn",
    "undoable",
]
