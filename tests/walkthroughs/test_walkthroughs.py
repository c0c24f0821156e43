"""Every walkthrough is complete (its sections, the Codex and nbagent files it names exist), its
committed ``.ipynb`` matches its source, it executes as CI and the docs run it with no error
output, and its exercise check passes with the intended answer and fails with a wrong one."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError

from nbagent.examples.walkthroughs import PLACEHOLDER, SANDBOX_FILES, SEED_FILES, Walkthrough, all_walkthroughs, kit
from nbagent.examples.walkthroughs.__main__ import EXECUTOR_ENV
from nbagent.kit.demo import notebook_kernel

REPO = Path(__file__).resolve().parents[2]
WALKTHROUGHS = all_walkthroughs()
REQUIRED = {"01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11"}
SECTIONS = ("Where this lives in Codex", "Where this lives in nbagent", "Exercise")
by_name = pytest.mark.parametrize("walkthrough", WALKTHROUGHS, ids=[w.name for w in WALKTHROUGHS])


def _text(walkthrough: Walkthrough) -> str:
    return "\n".join(source for _, source in walkthrough.cells)


def test_every_mechanism_has_its_walkthrough():
    assert {w.name[:2] for w in WALKTHROUGHS} >= REQUIRED


@by_name
def test_committed_notebook_matches_its_source(walkthrough: Walkthrough):
    committed = nbformat.read(str(REPO / "notebooks" / f"{walkthrough.name}.ipynb"), as_version=4)
    assert [c.source for c in committed.cells] == [c.source for c in walkthrough.build().cells], (
        "run: python -m nbagent.examples.walkthroughs write"
    )


@by_name
def test_names_only_files_that_exist(walkthrough: Walkthrough):
    text = _text(walkthrough)
    for section in SECTIONS:
        assert section in text, f"{walkthrough.name}: no {section!r} section"
    codex = set(re.findall(r"codex-rs/[\w./-]+\.rs", text))
    assert codex, f"{walkthrough.name} names no Codex file"
    allowed = set(SEED_FILES) | set(SANDBOX_FILES)
    assert codex <= allowed, f"{walkthrough.name} names Codex files outside the lesson: {codex - allowed}"
    modules = set(re.findall(r"nbagent/[\w/]+\.py", text))
    assert modules, f"{walkthrough.name} names no nbagent module"
    missing = sorted(m for m in modules if not (REPO / m).is_file())
    assert not missing, f"{walkthrough.name} names modules that do not exist: {missing}"
    data = [name for name in walkthrough.files if not kit.data(name).is_file()]
    assert not data, f"{walkthrough.name} reads files that do not ship beside it: {data}"


def _errors(nb: nbformat.NotebookNode) -> list[str]:
    return [
        f"cell {index}: {out.get('ename')}: {out.get('evalue')}"
        for index, cell in enumerate(nb.cells)
        for out in cell.get("outputs", [])
        if out["output_type"] == "error" or (out["output_type"] == "stream" and out.get("name") == "stderr" and "Traceback" in out.get("text", ""))
    ]


def _printed(cell: nbformat.NotebookNode) -> str:
    return "".join(out.get("text", "") for out in cell.get("outputs", []) if out["output_type"] == "stream")


@by_name
@pytest.mark.timeout(300)
def test_runs_headless_and_its_exercise_checks(walkthrough: Walkthrough, tmp_path: Path):
    nb = walkthrough.build()
    exercise = walkthrough.exercise_index()
    check = exercise + 1
    # nbclient puts each cell it runs at its index in ``nb``: keep the sources to vary.
    exercise_source, check_source = nb.cells[exercise].source, nb.cells[check].source
    with notebook_kernel(nb, tmp_path, timeout=walkthrough.timeout, env=EXECUTOR_ENV) as client:
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        assert not _errors(nb), _errors(nb)
        assert "Exercise:" in _printed(nb.cells[check]), "the unanswered exercise does not say what to do"

        def answer_with(line: str) -> nbformat.NotebookNode:
            client.execute_cell(nbformat.v4.new_code_cell(exercise_source.replace(PLACEHOLDER, line)), exercise)
            probe = nbformat.v4.new_code_cell(check_source)
            client.execute_cell(probe, check)
            return probe

        # The intended answer first: after a cell fails, the kernel drops requests already queued.
        assert "Right." in _printed(answer_with(walkthrough.answer))
        with pytest.raises(CellExecutionError, match="Not yet"):
            answer_with(walkthrough.wrong_answer)
