"""Ghost commits: a snapshot of a work tree as a git commit that no branch, index or stash sees.

Codex's way (``create_ghost_commit``): ``git add -A`` into a temporary index (``GIT_INDEX_FILE``)
seeded with a copy of the real one, so the stat cache spares hashing files that did not change;
``write-tree``; ``commit-tree``. The objects go into the repository's object store; the commit
is kept under a private ref (``refs/nbagent/...``) once it is worth keeping. Unlike Codex, the
commit has no parent (nothing reads it as history) and the snapshot index lasts between turns:
seeded once, it keeps its stat and untracked caches, so a snapshot reads only what changed. A
file tracked but ignored that is added to the repository's index later is not seen (Codex
copies the index each time).

Where the workspace is no git repository, the same is done in a private repository under the
home, one per workspace (its own ``GIT_DIR``, the workspace as ``GIT_WORK_TREE``): git's object
store is the content-addressed store of the before-versions, and each thread's index the stat
cache between turns, seeded from the one the workspace's latest thread left.
Untracked files larger than ``max_untracked_bytes`` are left out (Codex's
``ignore_large_untracked_files``): they are named as not saved, never copied.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from nbagent.checkpoint.watch import ChangeWatch, watch
from nbagent.protocol import FileChange

MAX_UNTRACKED_BYTES = 10 * 1024 * 1024
"""Codex's default limit for an untracked file a ghost commit takes."""
MESSAGE = "nbagent snapshot"
NOT_SNAPSHOT = (
    "__pycache__/", ".ipynb_checkpoints/", ".venv/", "venv/", "node_modules/", ".tox/", ".mypy_cache/",
    ".pytest_cache/", ".ruff_cache/", ".git/",
)  # fmt: skip
"""Outside git, what a ``.gitignore`` would usually leave out: environments, caches, nested
repositories. Their files are neither copied nor restored."""
ZERO = "0" * 40
REUSE_SECONDS = 3600.0
"""How long a snapshot is taken again as is while nothing changed: an unreferenced commit is
safe from ``git gc``'s pruning for two weeks, so an hour leaves a wide margin."""
_IDENTITY = {
    "GIT_AUTHOR_NAME": "nbagent", "GIT_AUTHOR_EMAIL": "nbagent@localhost",
    "GIT_COMMITTER_NAME": "nbagent", "GIT_COMMITTER_EMAIL": "nbagent@localhost",
}  # fmt: skip


class GhostError(RuntimeError):
    """A git command failed; the message says which and git's own words."""


@dataclass(frozen=True)
class GhostCommit:
    """A snapshot commit and the files left out of it."""

    id: str
    not_saved: tuple[str, ...] = ()


@dataclass
class GhostRepo:
    """Where snapshots of one work tree go: its own repository, or a private one.

    ``index`` is the thread's snapshot index (never the repository's own); ``seed`` the index it
    starts from when it has none yet, for its stat cache: the repository's own, or, for a private
    repository (``publish``), the index the workspace's latest thread left there."""

    git_dir: Path
    work_tree: Path
    index: Path
    seed: Path | None
    prefix: str = ""
    """The workspace inside the work tree (``sub/dir/``), the only part a snapshot reads."""
    max_untracked_bytes: int = MAX_UNTRACKED_BYTES
    publish: bool = False
    """Leave this index as the next thread's seed (a private repository shared by a workspace's threads)."""
    excluded: tuple[str, ...] = ()
    """Folders never snapshot, relative to the work tree: nbagent's home when it lies inside
    (its rollouts and these snapshots' own store)."""
    watch: ChangeWatch | None = None
    """Says when nothing changed since the last snapshot, which is then taken again as is."""
    env: dict[str, str] = field(init=False)
    head: str = field(init=False)
    """Its ``HEAD`` file, gone when the repository was removed."""
    _last: tuple[int, float, GhostCommit] | None = field(default=None, init=False)
    """The last snapshot: the watcher's generation as it began, when, and the commit."""

    def __post_init__(self) -> None:
        keep = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        self.env = {**keep, **_IDENTITY, "GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.work_tree),
                    "GIT_INDEX_FILE": str(self.index)}  # fmt: skip
        self.head = str(self.git_dir / "HEAD")

    def git(self, *args: str, stdin: bytes | None = None) -> bytes:
        done = subprocess.run(
            ["git", "-c", "core.quotepath=off", "-c", "core.untrackedCache=true", *args], input=stdin, capture_output=True, env=self.env,
            cwd=self.work_tree / self.prefix, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace").strip()
            raise GhostError(f"git {args[0]} failed in {self.work_tree}: {said}")
        return done.stdout

    def create_ghost_commit(self, message: str = MESSAGE) -> GhostCommit:
        """Snapshot the workspace part of the work tree as it is now (untracked, not ignored
        files too) as a commit with no parent: the last one again when nothing changed since."""
        seen = self.watch.generation() if self.watch is not None else None
        if (last := self.reusable()) is not None:
            return last
        not_saved = self.stage()
        tree = self.git("write-tree").decode().strip()
        commit = GhostCommit(self.git("commit-tree", tree, "-m", message).decode().strip(), not_saved)
        self._last = None if seen is None else (seen, time.monotonic(), commit)
        return commit

    def reusable(self) -> GhostCommit | None:
        """The last snapshot, when the watcher can tell at once that nothing under the workspace
        changed since it was taken; never blocks, so the event loop may ask."""
        last, watch = self._last, self.watch
        if last is None or watch is None or time.monotonic() - last[1] > REUSE_SECONDS:
            return None
        return last[2] if watch.generation(wait=False) == last[0] else None

    def stage(self) -> tuple[str, ...]:
        """The snapshot index brought to the work tree as it is now; the files left out.

        The index lasts between snapshots (seeded once from the repository's own), so its stat
        cache and untracked cache make a snapshot cost a ``stat`` per tracked file and a read of
        the folders that changed, not a read of every file."""
        if self.seed is not None and not self.index.exists() and self.seed.exists():
            shutil.copyfile(self.seed, self.index)
        large = self._large_untracked()
        specs = [".", *(f":(exclude,literal,top){path}" for path in (*self.excluded, *large))]
        self.git("add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", stdin="\0".join(specs).encode())
        return tuple(large)

    def publish_index(self) -> None:
        """Leave the index as the seed of the workspace's next thread, whole or not at all."""
        if self.publish and self.seed is not None and self.index.exists():
            partial = self.seed.with_name(f"{self.seed.name}.{os.getpid()}")
            shutil.copyfile(self.index, partial)
            os.replace(partial, self.seed)

    def _large_untracked(self) -> list[str]:
        specs = ["--", ".", *(f":(exclude,literal,top){path}" for path in self.excluded)]
        listed = self.git("ls-files", "-o", "--exclude-standard", "-z", "--full-name", *specs)
        large = []
        for name in listed.decode(errors="surrogateescape").split("\0"):
            if name:
                try:
                    if (self.work_tree / name).lstat().st_size > self.max_untracked_bytes:
                        large.append(name)
                except OSError:
                    continue  # gone since it was listed
        return large

    def keep(self, ref: str, commit: str) -> None:
        """Keep ``commit`` from garbage collection under ``ref``."""
        self.git("update-ref", ref, commit)

    def changes(self, before: str) -> list[FileChange]:
        """Every file that differs between snapshot ``before`` and the snapshot index (staged
        by ``stage``), with its blob ids and former mode."""
        raw = self.git("diff-index", "--cached", "-z", "--no-renames", "--raw", before, "--", ".")
        fields = raw.decode(errors="surrogateescape").split("\0")
        found = []
        for meta, path in zip(fields[0::2], fields[1::2], strict=False):
            old_mode, _new_mode, old, new, _status = meta.lstrip(":").split(" ")
            found.append(FileChange(path=path, before=None if old == ZERO else old, after=None if new == ZERO else new,
                                    mode=None if old == ZERO else old_mode))  # fmt: skip
        return found

    def current(self, paths: list[str]) -> dict[str, str | None]:
        """The blob id each file's content has now (``None``: it does not exist)."""
        there = [p for p in paths if (self.work_tree / p).is_file() or (self.work_tree / p).is_symlink()]
        lined = [p for p in there if "\n" not in p]  # one path a line; a name with a newline alone
        listed = "\n".join(str(self.work_tree / p) for p in lined).encode()
        ids = self.git("hash-object", "--stdin-paths", stdin=listed).decode().split() if lined else []
        now: dict[str, str | None] = dict.fromkeys(paths)
        now.update(zip(lined, ids, strict=True))
        for path in set(there) - set(lined):
            now[path] = self.git("hash-object", "--", str(self.work_tree / path)).decode().strip()
        return now

    def restore(self, change: FileChange) -> None:
        """Put one file back as it was before (or remove it, if it did not exist)."""
        target = self.work_tree / change.path
        if target.is_symlink() or target.exists():
            target.unlink()
        if change.before is None:
            return
        content = self.git("cat-file", "blob", change.before)
        target.parent.mkdir(parents=True, exist_ok=True)
        if change.mode == "120000":
            target.symlink_to(content.decode(errors="surrogateescape"))
            return
        target.write_bytes(content)
        if change.mode == "100755":
            target.chmod(target.stat().st_mode | 0o111)


def _inside(folder: Path, top: Path) -> tuple[str, ...]:
    """``folder`` as a path to leave out of the snapshots of ``top``; refused when it is ``top``,
    since then the snapshots would hold the store they are kept in, growing at every turn."""
    try:
        inside = folder.resolve().relative_to(top.resolve()).as_posix()
    except ValueError:
        return ()
    if inside == ".":
        raise GhostError(f"the workspace {top} is nbagent's home, where the snapshots are kept: "
                         "work in another folder to have turns checkpointed")
    return (inside,)


_OPENED: dict[tuple[Path, Path], GhostRepo] = {}
"""The repository each thread's workspace snapshots into, found once per process: a turn's
checkpoint then starts git no more than it must."""


def opened(workspace: Path, private_dir: Path) -> GhostRepo | None:
    """The repository ``open_repo`` found for this workspace and thread, if it did already."""
    known = _OPENED.get((workspace, private_dir))
    return known if known is not None and os.path.exists(known.head) else None


def open_repo(workspace: Path, private_dir: Path, home: Path | None = None) -> GhostRepo:
    """The snapshots of ``workspace``: in its own git repository when it is inside one (the
    snapshot index beside the thread in ``private_dir``), else in a private repository there;
    ``home`` is left out when it lies inside."""
    if (known := opened(workspace, private_dir)) is not None:
        return known
    _OPENED[(workspace, private_dir)] = repo = _open(workspace, private_dir, home)
    left_out = tuple(repo.work_tree / path for path in repo.excluded)
    names = frozenset(name.rstrip("/") for name in NOT_SNAPSHOT) if repo.publish else frozenset()
    repo.watch = watch(repo.work_tree / repo.prefix, left_out, names)
    return repo


def _open(workspace: Path, private_dir: Path, home: Path | None) -> GhostRepo:
    private_dir.mkdir(parents=True, exist_ok=True)
    probe = subprocess.run(
        ["git", "rev-parse", "--absolute-git-dir", "--show-toplevel", "--show-prefix"], cwd=workspace,
        capture_output=True, text=True, check=False, env={k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    )  # fmt: skip
    lines = probe.stdout.split("\n")
    if probe.returncode == 0 and len(lines) >= 3 and lines[1]:
        git_dir = Path(lines[0])
        top = Path(lines[1])
        return GhostRepo(git_dir, top, private_dir / "index", seed=git_dir / "index", prefix=lines[2],
                         excluded=_inside(home or private_dir, top))  # fmt: skip
    # One private repository per workspace, beside the threads: a new thread's first snapshot
    # starts from the index the last one left, so it copies only what changed since.
    shared = private_dir.parent / "workspaces" / hashlib.sha256(str(workspace.resolve()).encode()).hexdigest()[:16]
    git_dir = shared / "repo.git"
    if not (git_dir / "HEAD").exists():
        subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True, capture_output=True)
        subprocess.run(["git", "--git-dir", str(git_dir), "config", "core.bare", "false"], check=True, capture_output=True)
        (git_dir / "info").mkdir(exist_ok=True)
        (git_dir / "info" / "exclude").write_text("".join(f"{name}\n" for name in NOT_SNAPSHOT))
    return GhostRepo(git_dir, workspace, private_dir / "index", seed=shared / "index", publish=True,
                     excluded=_inside(home or private_dir, workspace))  # fmt: skip
