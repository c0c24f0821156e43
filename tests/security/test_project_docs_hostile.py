"""A notebook folder from someone else: its ``AGENTS.md`` candidates must not hang the kernel,
read files outside the project, or send more than the budget."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nbagent.config import Config, ConfigError, load_config
from nbagent.config.project_docs import find_project_docs


def find(cwd: Path, home: Path, max_bytes: int = 32_768):
    return find_project_docs(cwd, home, max_bytes=max_bytes, fallback_names=[], root_markers=[".git"])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


def test_a_fifo_named_agents_md_is_skipped_not_read(project: Path, tmp_path: Path) -> None:
    os.mkfifo(project / "AGENTS.md")  # opening it for reading would block until a writer comes
    docs = find(project, tmp_path / "home")
    assert docs.docs == ()
    assert [s.reason for s in docs.skipped] == ["not a regular file"]


def test_a_link_out_of_the_project_is_skipped(project: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("ssh key material")
    (project / "AGENTS.md").symlink_to(secret)
    (project / "AGENTS.override.md").symlink_to(project / "AGENTS.md")  # a chain ending outside too
    docs = find(project, tmp_path / "home")
    assert "ssh key" not in docs.text()
    assert len(docs.skipped) == 2 and all("outside" in s.reason for s in docs.skipped)


def test_a_link_loop_and_a_directory_are_skipped(project: Path, tmp_path: Path) -> None:
    (project / "AGENTS.override.md").symlink_to(project / "AGENTS.override.md")
    (project / "AGENTS.md").mkdir()
    docs = find(project, tmp_path / "home")
    assert docs.docs == () and len(docs.skipped) == 2


def test_a_huge_file_is_read_only_up_to_the_budget(project: Path, tmp_path: Path) -> None:
    big = project / "AGENTS.md"
    with big.open("wb") as fh:
        fh.write(b"x" * 1000)
        fh.truncate(8 * 1024**3)  # 8 GiB, sparse: reading it whole would exhaust memory
    docs = find(project, tmp_path / "home", max_bytes=4096)
    assert docs.text() == "x" * 1000 and docs.docs[0].truncated and docs.docs[0].size == 8 * 1024**3


def test_invalid_utf8_is_dropped_not_an_error(project: Path, tmp_path: Path) -> None:
    (project / "AGENTS.md").write_bytes(b"ok \xff\xfe then more")
    assert find(project, tmp_path / "home").text() == "ok  then more"


@pytest.mark.parametrize("name", ["../AGENTS.md", "/etc/passwd", "", "..", "a\\b"])
def test_fallback_names_and_markers_must_be_plain_names(tmp_path: Path, name: str) -> None:
    (tmp_path / "nbagent.toml").write_text(f"project_doc_fallback_filenames = [{name!r}]\n".replace("'", '"'))
    with pytest.raises(ConfigError, match="project_doc_fallback_filenames"):
        load_config(tmp_path)
    with pytest.raises(ValueError, match="plain file name"):
        Config(project_root_markers=[name])
