"""``python -m nbagent.examples.walkthroughs write [DIR]`` writes the notebooks (default
``notebooks/``); ``execute --out DIR [NAME...]`` runs them as the docs do (widgets rendered, the
autopilot answering) and writes the executed copies, with their widget state, to ``DIR``;
``commit [NAME...]`` (``make walkthroughs``) writes the quickstart and the walkthroughs, then runs
every ``notebooks/*.ipynb`` the ordinary way (nbclient, as ``jupyter nbconvert --execute`` does,
with no ``NBAGENT_*`` variable) and keeps its outputs in the committed notebook.

``execute`` also runs the quickstart, as ``00-quickstart``: the docs site shows it first."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import nbformat

from nbagent.examples.walkthroughs import all_walkthroughs, get, write
from nbagent.kit.demo import EXECUTOR_ENV, WIDGET_STATE, make_output_dir
from nbagent.kit.demo import execute as run_notebook

__all__ = ["EXECUTOR_ENV", "QUICKSTART", "WIDGET_STATE", "commit", "execute", "main", "names", "ordinary_env", "run_all"]

REPO = Path(__file__).resolve().parents[3]
"""The checkout (or site-packages) this package runs from."""

QUICKSTART = "00-quickstart"
"""The quickstart's name among the executed notebooks (it is not a ``wNN`` walkthrough module)."""


def names() -> list[str]:
    """Every notebook ``execute`` runs by default: the quickstart, then the walkthroughs."""
    return [QUICKSTART, *(w.name for w in all_walkthroughs())]


def _notebook(name: str) -> tuple[str, nbformat.NotebookNode, int]:
    """The notebook called (or numbered) ``name``: its full name, its cells, seconds per cell."""
    if name in (QUICKSTART, QUICKSTART[:2]):
        from nbagent.examples.quickstart import build

        return QUICKSTART, build(), 120
    walkthrough = get(name)
    return walkthrough.name, walkthrough.build(), walkthrough.timeout


def execute(name: str, out: Path) -> Path:
    """Run the notebook ``name`` in a scratch folder with nobody at it; write it, with its widgets'
    final state, as ``out/NAME.ipynb``. The folder is outside any git checkout (``out`` may be in
    one, and ignored there): a turn's checkpoint snapshots its workspace with the git it is in."""
    full_name, nb, timeout = _notebook(name)
    work = Path(tempfile.mkdtemp(prefix=f"nbagent-{full_name}-"))
    run_notebook(nb, work, timeout=timeout, env=EXECUTOR_ENV)
    # Cells hold magics and top-level await: highlight them as IPython, not Python.
    nb.metadata.setdefault("language_info", {})["pygments_lexer"] = "ipython3"
    target = make_output_dir(out) / f"{full_name}.ipynb"
    nbformat.write(nb, str(target))
    return target


def ordinary_env() -> dict[str, str]:
    """This process's environment without any ``NBAGENT_*`` variable: a notebook run the ordinary
    way gets no help from nbagent's own executor settings."""
    return {key: value for key, value in os.environ.items() if not key.startswith("NBAGENT_")}


def commit(notebooks: Path, scratch: Path, only: list[str] | None = None) -> list[Path]:
    """Write the quickstart and the walkthroughs into ``notebooks``, then run each
    ``notebooks/*.ipynb`` (every one there, or those whose name starts with one of ``only``), one
    at a time, in ``scratch/NAME`` with nbclient and ``ordinary_env()``; write its outputs into
    the committed notebook. A failing cell raises before its notebook is written."""
    import nbclient

    from nbagent.examples import quickstart

    def chosen(name: str) -> bool:
        return not only or any(name.startswith(prefix) for prefix in only)

    for walkthrough in all_walkthroughs():
        if chosen(walkthrough.name):
            nbformat.write(walkthrough.build(), str(notebooks / f"{walkthrough.name}.ipynb"))
    if chosen(QUICKSTART):
        quickstart.write(notebooks / f"{QUICKSTART}.ipynb")
    done = []
    for path in sorted(notebooks.glob("*.ipynb")):
        if not chosen(path.stem):
            continue
        work = scratch / path.stem
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        nb = nbformat.read(str(path), as_version=4)
        started = time.monotonic()
        client = nbclient.NotebookClient(nb, timeout=300, record_timing=False, resources={"metadata": {"path": str(work)}})
        client.execute(env=ordinary_env())
        # Where it ran, so a comparison with another run can tell the folders apart from the text.
        nb.metadata.setdefault("nbagent", {})["ran_in"] = {"run": str(work), "venv": sys.prefix, "repo": str(REPO)}
        nbformat.write(nb, str(path))
        print(f"{path} ({time.monotonic() - started:.1f} s)", flush=True)
        done.append(path)
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nbagent.examples.walkthroughs")
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="write the notebooks")
    w.add_argument("dir", nargs="?", default="notebooks")
    x = sub.add_parser("execute", help="run the quickstart and the walkthroughs and write the executed copies")
    x.add_argument("--out", default="build/walkthroughs")
    x.add_argument("-j", "--jobs", type=int, default=2, help="notebooks run at once, each in its own process (default 2)")
    x.add_argument("names", nargs="*", help=f"notebooks by name or number, {QUICKSTART} included (default: all)")
    c = sub.add_parser("commit", help="write the notebooks, run each the ordinary way and keep its outputs in notebooks/")
    c.add_argument("--scratch", help="where the notebooks run (default: a new temporary folder, removed after)")
    c.add_argument("names", nargs="*", help="notebooks by name or number (default: every notebooks/*.ipynb)")
    args = parser.parse_args(argv)
    if args.command == "write":
        for path in write(args.dir):
            print(path)
        return 0
    if args.command == "commit":
        # Outside any git checkout by default: a turn snapshots its workspace with git first.
        scratch = Path(args.scratch or tempfile.mkdtemp(prefix="nbagent-walkthroughs-")).resolve()
        commit(Path("notebooks"), scratch, args.names)
        if not args.scratch:
            shutil.rmtree(scratch, ignore_errors=True)
        return 0
    return run_all(args.names or names(), Path(args.out), max(1, args.jobs))


def _timed(name: str, out: Path) -> str:
    started = time.monotonic()
    try:
        target = execute(name, out)
    except Exception as exc:  # nbclient's errors do not survive the trip back from a worker process
        raise RuntimeError(f"{name}: {exc}") from None
    return f"{target} ({time.monotonic() - started:.1f} s)"


def run_all(todo: list[str], out: Path, jobs: int) -> int:
    """Execute ``todo`` with up to ``jobs`` at once, each in a worker process of its own; print
    each as it ends. The first failure is raised once the others have ended."""
    if jobs == 1 or len(todo) == 1:
        for name in todo:
            print(_timed(name, out), flush=True)
        return 0
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_timed, name, out) for name in todo]
        for future in as_completed(futures):
            if future.exception() is None:
                print(future.result(), flush=True)
        for future in futures:
            future.result()
    return 0


if __name__ == "__main__":
    sys.exit(main())
