"""One turn's checkpoint: a ghost commit before its first call that may change the workspace,
the snapshot index brought up to date when it ends, and the files that differ as a
``GhostSnapshot`` item (the before-commit kept under the turn's ref).

The snapshot is taken before any tool that is not read-only runs (``shell``, ``run_python``,
``apply_patch``, an MCP server's tool): any of them may write any workspace file, so which file
a call changed is learnt by comparing, not by asking the tool.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path

from nbagent.checkpoint.ghost import GhostCommit, GhostRepo, open_repo, opened
from nbagent.protocol import GhostSnapshot

REF_PREFIX = "refs/nbagent/checkpoints"


@functools.lru_cache(maxsize=64)
def _places(workspace: str | Path, home: str | Path, thread_id: str) -> tuple[Path, Path, Path]:
    """The workspace, the home and the thread's private folder, made once per thread: an outside
    agent's every call is a turn of its own."""
    return Path(workspace), Path(home), Path(home) / "checkpoints" / thread_id


class TurnCheckpoint:
    """The checkpoint of the turn ``turn_id`` of ``thread_id`` on ``workspace``; snapshots are
    kept under ``home/checkpoints/THREAD`` (and the workspace's own repository, if any)."""

    def __init__(self, workspace: str | Path, home: str | Path, thread_id: str, turn_id: str) -> None:
        self.workspace, self.home, self.private_dir = _places(workspace, home, thread_id)
        self.ref = f"{REF_PREFIX}/{thread_id}/{turn_id}"
        self._repo: GhostRepo | None = None
        self._before: GhostCommit | None = None
        self._taking: asyncio.Task[None] | None = None

    @property
    def taken(self) -> bool:
        return self._before is not None

    def unchanged(self) -> bool:
        """Nothing changed since the snapshot before, as the watcher can tell at once."""
        return (self._repo is not None and (self._taking is None or self._taking.done())
                and self._repo.reusable() is self._before)  # fmt: skip

    async def before_change(self) -> None:
        """Snapshot the workspace once, before the turn's first change (parallel calls share it);
        the last snapshot again, without leaving the event loop, when nothing changed since."""
        if self._before is not None:
            return
        if self._taking is None:
            repo = opened(self.workspace, self.private_dir)
            if repo is not None and (last := repo.reusable()) is not None:
                self._repo, self._before = repo, last
                return
            self._taking = asyncio.ensure_future(asyncio.to_thread(self._take))
        await asyncio.shield(self._taking)

    def _take(self) -> None:
        self._repo = open_repo(self.workspace, self.private_dir, self.home)
        self._before = self._repo.create_ghost_commit()

    async def settle(self) -> GhostSnapshot | None:
        """What the turn changed, kept under the turn's ref; ``None`` when nothing was snapshot
        before or nothing changed."""
        if self._taking is not None:
            await asyncio.gather(self._taking, return_exceptions=True)
        if self._repo is None or self._before is None or self.unchanged():
            return None
        return await asyncio.to_thread(self._settle, self._repo, self._before)

    def _settle(self, repo: GhostRepo, before: GhostCommit) -> GhostSnapshot | None:
        not_saved = repo.stage()  # the after-state is only compared: no commit of it is kept
        repo.publish_index()
        changes = repo.changes(before.id)
        if not changes:
            return None
        repo.keep(self.ref, before.id)
        return GhostSnapshot(
            git_dir=str(repo.git_dir), work_tree=str(repo.work_tree), commit=before.id, ref=self.ref, changes=changes,
            not_saved=sorted(set(before.not_saved) | set(not_saved)),
        )  # fmt: skip
