"""nbagent's home is made private: on a shared machine (a JupyterHub whose users' homes are 0755,
as Debian's ``useradd -m`` makes them) another user cannot list it or read the index, the
checkpoints or the logs beside the 0600 rollouts. The same, on a real hub with real users:
tests/hub/test_hub.py."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from nbagent.config.edit import editing
from nbagent.store.threads import ThreadStore


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_home_the_thread_store_makes_is_0700(tmp_path: Path, open_umask: None) -> None:
    with ThreadStore(tmp_path / "home"):
        pass
    assert mode(tmp_path / "home") == 0o700


def test_a_home_a_config_edit_makes_is_0700(tmp_path: Path, open_umask: None) -> None:
    # `nbagent trust` is often the first thing to write there: it makes the home for config.toml.
    with editing(tmp_path / "home" / "config.toml") as doc:
        doc["model"] = "gpt-5.1"
    assert mode(tmp_path / "home") == 0o700


def test_a_home_that_exists_keeps_its_mode(tmp_path: Path, open_umask: None) -> None:
    (tmp_path / "home").mkdir(mode=0o750)
    with ThreadStore(tmp_path / "home"):
        pass
    assert mode(tmp_path / "home") == 0o750
