"""``nbagent undo THREAD [--turn ID] [--force]``: put back the workspace files a turn changed.

The thread is opened like ``nbagent resume`` opens it, the ``Undo`` op does the work, and the
answer is one line: what was restored, or why nothing was (a later turn to undo first, files a
person changed since; ``--force`` overwrites those, naming them). ``--list`` names every turn
that changed files or notebook cells and what its undo puts back.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from nbagent import signals
from nbagent.config import load_config
from nbagent.kit.args import BadInput, Parser, cwd_option
from nbagent.textsafe import VisibleWriter

NO_MODEL = "undo"


def add_parser(sub: argparse._SubParsersAction[Parser]) -> Parser:
    p = sub.add_parser("undo", help="put back the workspace files a turn of a thread changed")
    cwd_option(p)
    p.add_argument("thread", help="the thread's id, name or a unique id prefix (nbagent threads)")
    p.add_argument("--turn", help="the turn to undo (default: the thread's latest turn that changed files)")
    p.add_argument("--force", action="store_true", help="also overwrite files changed after the turn")
    p.add_argument("--list", action="store_true",
                   help="list the turns that changed files or notebook cells, whether each is undone and what it puts back")
    return p


def _list(thread: str, home: Path) -> int:
    """The thread's turns that changed files or cells, read from its rollout (nothing is opened for writing)."""
    from nbagent.checkpoint import undoable
    from nbagent.store import ThreadStore

    with ThreadStore(home) as store:
        found = store.resolve(thread)
        if found is None:
            raise BadInput(f"no thread with id or name {thread!r} under {home}")
        lines = undoable(store.load(found).items)
    out = VisibleWriter(sys.stdout)
    out.write("\n".join(lines) + "\n" if lines else f"no turn of thread {found} changed workspace files or notebook cells\n")
    out.flush()
    return 0


def main(args: argparse.Namespace) -> int:
    """The command's exit code: ``--list`` reads the rollout; an undo opens the thread."""
    if not args.thread.strip():
        raise BadInput("a thread id or name is required, got an empty one")
    if args.list:
        return _list(args.thread, load_config(args.cwd).home_path)
    return signals.run(run(args))


async def run(args: argparse.Namespace) -> int:
    from nbagent.core.session import Session
    from nbagent.protocol import Undo, UndoCompleted

    config = load_config(args.cwd)
    # No model runs: naming one spares the thread's provider from having to be configured here.
    async with Session(model=NO_MODEL, cwd=args.cwd, config=config, thread=args.thread, entry="cli") as session:
        done = await session.perform(Undo(turn_id=args.turn, force=args.force))
    assert isinstance(done, UndoCompleted)
    out = VisibleWriter(sys.stdout if done.success else sys.stderr)
    out.write(done.message + "\n")
    out.flush()
    return 0 if done.success else 1
