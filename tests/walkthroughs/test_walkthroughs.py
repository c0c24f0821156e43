"""Every walkthrough is complete (its sections, the Codex and nbagent files it names exist) and its
committed ``.ipynb`` matches its source. Every notebook in notebooks/ runs the ordinary way, plain
``jupyter nbconvert --execute`` with no ``NBAGENT_*`` variable, with no error output and the
outputs it was committed with (normalised: ``outputs.py``); a walkthrough's exercise check, run
after it, passes with the intended answer and refuses a wrong one. papermill runs them too, and
with the autopilot switched off an ask is declined at once and a check cell stops the story."""

from __future__ import annotations

import difflib
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from nbagent.examples.walkthroughs import (
    PLACEHOLDER,
    REVIEW_FILES,
    SANDBOX_FILES,
    SEED_FILES,
    Walkthrough,
    all_walkthroughs,
    kit,
)
from nbagent.examples.walkthroughs.__main__ import ordinary_env
from tests.walkthroughs.outputs import matches, seen

REPO = Path(__file__).resolve().parents[2]
WALKTHROUGHS = all_walkthroughs()
REQUIRED = {"00", "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13"}
SECTIONS = ("Where this lives in Codex", "Where this lives in nbagent", "Exercise")
by_name = pytest.mark.parametrize("walkthrough", WALKTHROUGHS, ids=[w.name for w in WALKTHROUGHS])
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
"""Every committed notebook, whether written from a walkthrough module or not."""
BIN = Path(sys.executable).parent
STALE = "run `make walkthroughs` and commit notebooks/"


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


def test_every_codex_file_beyond_the_lessons_is_named_by_a_walkthrough():
    named = {path for w in WALKTHROUGHS for path in re.findall(r"codex-rs/[\w./-]+\.rs", _text(w))}
    assert set(SANDBOX_FILES) | set(REVIEW_FILES) <= named, "drop what no walkthrough names"


@by_name
def test_names_only_files_that_exist(walkthrough: Walkthrough):
    text = _text(walkthrough)
    for section in SECTIONS:
        assert section in text, f"{walkthrough.name}: no {section!r} section"
    codex = set(re.findall(r"codex-rs/[\w./-]+\.rs", text))
    assert codex, f"{walkthrough.name} names no Codex file"
    allowed = set(SEED_FILES) | set(SANDBOX_FILES) | set(REVIEW_FILES)
    assert codex <= allowed, f"{walkthrough.name} names Codex files outside the lesson: {codex - allowed}"
    modules = set(re.findall(r"nbagent/[\w/]+\.py", text))
    assert modules, f"{walkthrough.name} names no nbagent module"
    missing = sorted(m for m in modules if not (REPO / m).is_file())
    assert not missing, f"{walkthrough.name} names modules that do not exist: {missing}"
    data = [name for name in walkthrough.files if not kit.data(name).is_file()]
    assert not data, f"{walkthrough.name} reads files that do not ship beside it: {data}"



CODEX_LINK = re.compile(r"https://github\.com/openai/codex/[^\s)>\]]*")
PINNED = re.compile(r"https://github\.com/openai/codex/blob/[0-9a-f]{40}/codex-rs/[\w./-]+\.rs#L\d+-L\d+")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_codex_citations_name_a_commit_and_lines(path: Path):
    """A reader who follows a Codex link lands on the lines the notebook means, at the commit it
    was read at, not on whatever the file holds today."""
    nb = nbformat.read(str(path), as_version=4)
    links = CODEX_LINK.findall("\n".join(c.source for c in nb.cells if c.cell_type == "markdown"))
    unpinned = [link for link in links if not PINNED.fullmatch(link)]
    assert not unpinned, f"{path.name}: Codex links without a commit and an #L range: {unpinned}"
    if path.name[:2] in REQUIRED - {"00"}:
        assert links, f"{path.name} cites no Codex lines"


def _errors(nb: nbformat.NotebookNode) -> list[str]:
    return [
        f"cell {index}: {out.get('ename')}: {out.get('evalue')}"
        for index, cell in enumerate(nb.cells)
        for out in cell.get("outputs", [])
        if out["output_type"] == "error" or (out["output_type"] == "stream" and out.get("name") == "stderr" and "Traceback" in out.get("text", ""))
    ]


def _printed(cell: nbformat.NotebookNode) -> str:
    return "".join(out.get("text", "") for out in cell.get("outputs", []) if out["output_type"] == "stream")


PROBE = "nbagent-exercise-probe"


def _with_exercise_probes(nb: nbformat.NotebookNode, walkthrough: Walkthrough) -> None:
    """Append to ``nb`` the exercise answered right, then wrong (its check must refuse it)."""
    exercise = walkthrough.exercise_index()
    exercise_source, check_source = nb.cells[exercise].source, nb.cells[exercise + 1].source
    right = exercise_source.replace(PLACEHOLDER, walkthrough.answer) + "\n" + check_source
    wrong = "\n".join([
        exercise_source.replace(PLACEHOLDER, walkthrough.wrong_answer),
        "try:",
        textwrap.indent(check_source, "    "),
        "except AssertionError as refused:",
        "    assert str(refused).startswith('Not yet'), refused",
        "    print('refused:', refused)",
        "else:",
        "    raise AssertionError('the check accepted the wrong answer')",
    ])
    for source in (right, wrong):
        nb.cells.append(nbformat.v4.new_code_cell(source, metadata={"tags": [PROBE]}))


def _places(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    ran = nb.metadata.get("nbagent", {}).get("ran_in", {})
    return [(ran.get(key, ""), f"<{key}>") for key in ("run", "venv", "repo")]


@pytest.fixture(scope="module")
def nbconvert_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every notebook, each in a folder of its own (a walkthrough with its exercise answered after
    it), run by one plain ``jupyter nbconvert --to notebook --execute`` with no NBAGENT_*
    variable: one command for all, so CI pays for nbconvert's start once. ``--allow-errors``
    lets the others run past one that fails; each test then reads its notebook's errors."""
    root = tmp_path_factory.mktemp("nbconvert").resolve()
    inputs = {}
    for path in NOTEBOOKS:
        nb = nbformat.read(str(path), as_version=4)
        walkthrough = next((w for w in WALKTHROUGHS if w.name == path.stem), None)
        if walkthrough is not None:
            _with_exercise_probes(nb, walkthrough)
        (root / path.stem).mkdir()
        inputs[path.stem] = root / path.stem / path.name
        nbformat.write(nb, str(inputs[path.stem]))
    done = subprocess.run(
        [str(BIN / "jupyter"), "nbconvert", "--to", "notebook", "--execute", "--allow-errors",
         "--ExecutePreprocessor.timeout=240", "--ExecutePreprocessor.startup_timeout=180", *map(str, inputs.values())],
        cwd=root, env=ordinary_env(), capture_output=True, text=True, timeout=1500,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return {name: path.with_suffix(".nbconvert.ipynb") for name, path in inputs.items()}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
@pytest.mark.timeout(1600)  # the first one waits for every notebook's run
def test_runs_under_nbconvert_as_committed(path: Path, nbconvert_runs: dict[str, Path]):
    committed = nbformat.read(str(path), as_version=4)
    assert committed.metadata.get("nbagent", {}).get("ran_in"), f"{path.name} was committed without its outputs: {STALE}"
    fresh = nbformat.read(str(nbconvert_runs[path.stem]), as_version=4)
    assert not _errors(fresh), _errors(fresh)

    run = str(nbconvert_runs[path.stem].parent)
    here = [(run, "<run>"), (sys.prefix, "<venv>"), (str(REPO), "<repo>")]
    for index, (was, now) in enumerate(zip(committed.cells, fresh.cells, strict=False)):
        if was.cell_type != "code":
            continue
        before, after = seen(was, _places(committed)), seen(now, here)
        assert matches(before, after), f"{path.name} cell {index} is stale ({STALE}):\n" + "\n".join(
            difflib.unified_diff("\n".join(before).splitlines(), "\n".join(after).splitlines(), "committed", "this run", lineterm=""))

    walkthrough = next((w for w in WALKTHROUGHS if w.name == path.stem), None)
    if walkthrough is not None:
        check = walkthrough.exercise_index() + 1
        assert "Exercise:" in _printed(fresh.cells[check]), "the unanswered exercise does not say what to do"
        right, wrong = fresh.cells[-2:]
        assert "Right." in _printed(right)
        assert "refused: Not yet" in _printed(wrong)


def _papermill(name: str, run: Path, *parameters: str) -> subprocess.CompletedProcess[str]:
    run.mkdir()
    return subprocess.run(
        [str(BIN / "papermill"), str(REPO / "notebooks" / f"{name}.ipynb"), "out.ipynb", *parameters],
        cwd=run, env=ordinary_env(), capture_output=True, text=True, timeout=280,
    )


@pytest.mark.timeout(300)
def test_papermill_runs_a_walkthrough_and_its_autopilot_switch(tmp_path: Path):
    """As committed, papermill runs a walkthrough to the end; with ``-p AUTOPILOT False`` and
    nobody to click, 08's patch is declined at once (no wait) and the check cell under "the test
    is green" stops the run with what happened instead."""
    ran = _papermill("04-approval", tmp_path / "on")
    assert ran.returncode == 0, ran.stderr[-4000:]
    assert not _errors(nbformat.read(str(tmp_path / "on" / "out.ipynb"), as_version=4))

    name = "08-fix-a-failing-test"
    off = _papermill(name, tmp_path / "off", "-p", "AUTOPILOT", "False")
    assert off.returncode != 0
    out = nbformat.read(str(tmp_path / "off" / "out.ipynb"), as_version=4)
    printed = "".join(_printed(cell) for cell in out.cells)
    assert "autopilot off: no notebook UI here, so nobody can click" in printed
    assert "no code in this notebook answers" in printed and "policy on-request" in printed
    assert "no front end is attached to ask: it was declined without running." in printed
    assert "The patch was not approved (the card above says by whom), so calc/core.py is unchanged" in printed
    errors = _errors(out)
    assert len(errors) == 1 and "says the fix is on disk and the test is green, but in this run pytest still fails" in errors[0]
