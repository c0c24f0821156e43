"""Helpers for the store's hostile-input tests: the real ``nbagent`` command, the bytes a home
holds on disk, and a real full filesystem (a small tmpfs)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.trusting import clean_environ

ROOT = Path(__file__).resolve().parents[2]
SERVERS = ROOT / "tests" / "servers"
CLI = [sys.executable, "-m", "nbagent.cli"]


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    """The user's environment without nbagent/OpenAI settings, plus ``$NBAGENT_HOME``."""
    env = clean_environ()
    env["NBAGENT_HOME"] = str(home)
    env["PYTHONPATH"] = str(ROOT)
    return {**env, **extra}


def nbagent(*args: str, home: Path, cwd: Path | None = None, timeout: float = 60,
            **extra: str) -> subprocess.CompletedProcess[str]:
    """One ``nbagent`` command to its end; ``timeout`` bounds a hang (it raises)."""
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout,
                          env=cli_env(home, **extra), cwd=cwd or ROOT)


def spawn(*args: str, home: Path, cwd: Path | None = None, **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=cli_env(home, **extra), cwd=cwd or ROOT)


def disk_bytes(home: Path) -> bytes:
    """Everything nbagent keeps of its threads: rollouts, the index and its WAL/journal."""
    files = sorted(home.glob("threads/**/*.jsonl")) + sorted(home.glob("state.sqlite*"))
    return b"".join(p.read_bytes() for p in files if p.is_file())


def fill(directory: Path) -> None:
    """Write until the filesystem has no byte left."""
    with open(directory / "filler", "wb", buffering=0) as fh:
        with contextlib.suppress(OSError):
            while True:
                fh.write(b"\0" * 4096)
        with contextlib.suppress(OSError):
            while True:
                fh.write(b"\0")


@contextlib.contextmanager
def small_filesystem(where: Path, size: str = "256k") -> Iterator[Path]:
    """A real tmpfs of ``size`` mounted at ``where`` (needs root); skips the test when it cannot."""
    import pytest

    where.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {proc.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)

