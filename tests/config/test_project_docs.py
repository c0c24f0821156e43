"""``AGENTS.md`` discovery as a person with a project tree sees it, and what the model receives."""

from __future__ import annotations

from pathlib import Path

from nbagent import Session
from nbagent.config import Config, ModelProviderConfig
from nbagent.config.project_docs import find_project_docs


def find(cwd: Path, home: Path, *, max_bytes: int = 32_768, fallback: list[str] | None = None,
         markers: list[str] | None = None):
    return find_project_docs(cwd, home, max_bytes=max_bytes, fallback_names=fallback or [],
                             root_markers=markers or [".git"])


def tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A git project with notebooks two levels down, and nbagent's home beside it."""
    root = tmp_path / "project"
    nb = root / "analysis" / "notebooks"
    nb.mkdir(parents=True)
    (root / ".git").mkdir()
    home = tmp_path / "home"
    home.mkdir()
    return root, nb, home


def test_files_from_root_down_to_the_notebook_folder_in_that_order(tmp_path: Path) -> None:
    root, nb, home = tree(tmp_path)
    (home / "AGENTS.md").write_text("global: be brief")
    (root / "AGENTS.md").write_text("root: use uv")
    (root / "analysis" / "AGENTS.md").write_text("analysis: plots in svg")
    (nb / "AGENTS.md").write_text("notebooks: never clear outputs")
    (tmp_path / "AGENTS.md").write_text("outside the project: must not be read")
    docs = find(nb, home)
    assert [d.text for d in docs.docs] == [
        "global: be brief", "root: use uv", "analysis: plots in svg", "notebooks: never clear outputs"]
    assert [d.scope for d in docs.docs] == ["global", "project", "project", "project"]
    assert docs.text().index("root") < docs.text().index("notebooks")


def test_override_wins_in_its_folder_then_fallback_names(tmp_path: Path) -> None:
    root, nb, home = tree(tmp_path)
    (root / "AGENTS.md").write_text("plain")
    (root / "AGENTS.override.md").write_text("override")
    (nb / "CLAUDE.md").write_text("fallback")
    assert [d.text for d in find(nb, home).docs] == ["override"]
    assert [d.text for d in find(nb, home, fallback=["CLAUDE.md"]).docs] == ["override", "fallback"]


def test_empty_files_are_skipped_and_without_a_root_only_the_folder_counts(tmp_path: Path) -> None:
    folder = tmp_path / "loose" / "nb"
    folder.mkdir(parents=True)
    (tmp_path / "loose" / "AGENTS.md").write_text("parent without a marker")
    (folder / "AGENTS.override.md").write_text("  \n")
    (folder / "AGENTS.md").write_text("here")
    home = tmp_path / "home"
    assert [d.text for d in find(folder, home).docs] == ["here"]
    assert [d.text for d in find(folder, home, markers=["pyproject.toml"]).docs] == ["here"]
    (tmp_path / "loose" / "pyproject.toml").write_text("")
    assert [d.text for d in find(folder, home, markers=["pyproject.toml"]).docs] == ["parent without a marker", "here"]


def test_the_budget_cuts_the_combined_text_and_says_so(tmp_path: Path) -> None:
    root, nb, home = tree(tmp_path)
    (root / "AGENTS.md").write_text("r" * 60)
    (nb / "AGENTS.md").write_text("n" * 60)
    docs = find(nb, home, max_bytes=100)
    assert [len(d.text) for d in docs.docs] == [60, 40]
    assert [d.truncated for d in docs.docs] == [False, True]
    assert "cut to 40 B by project_doc_max_bytes" in docs.describe()[1]
    docs = find(nb, home, max_bytes=60)
    assert [d.text for d in docs.docs] == ["r" * 60]
    assert docs.describe()[-1].endswith("skipped: over project_doc_max_bytes (60)")


async def test_the_model_receives_them_and_an_edit_counts_from_the_next_turn(openai_server, tmp_path: Path) -> None:
    root, nb, home = tree(tmp_path)
    (root / "AGENTS.md").write_text("Answer in French.")
    config = Config(model="m", model_provider="local", home=str(home), instructions="Configured text.",
                    model_providers={"local": ModelProviderConfig(base_url=openai_server.base_url)})
    config.api_key = "sk-unused"
    openai_server.script([{"text": "Bonjour."}, {"text": "Salut."}])
    async with Session(config=config, cwd=nb) as session:
        await session.run("hello")
        (nb / "AGENTS.md").write_text("Use metric units.")
        await session.run("again")
        lines = session.snapshot().project_docs.describe()
    first, second = (r["instructions"] for r in openai_server.requests)
    assert "Configured text." in first and "Answer in French." in first and "metric" not in first
    assert first.index("Configured text.") < first.index("Answer in French.")
    assert second.index("Answer in French.") < second.index("Use metric units.")
    assert lines == [f"{root / 'AGENTS.md'} (project, 17 B)", f"{nb / 'AGENTS.md'} (project, 17 B)"]
