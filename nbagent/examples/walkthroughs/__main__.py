"""``python -m nbagent.examples.walkthroughs write [DIR]`` writes the notebooks (default
``notebooks/``); ``execute --out DIR [NAME...]`` runs them as CI and the docs do (widgets rendered,
the autopilot answering) and writes the executed copies, with their widget state, to ``DIR``.

``execute`` also runs the quickstart, as ``00-quickstart``: the docs site shows it first."""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import TYPE_CHECKING, Any

import nbformat

from nbagent.examples.walkthroughs import all_walkthroughs, get, write
from nbagent.examples.walkthroughs.kit import AUTOPILOT_ENV

if TYPE_CHECKING:
    from nbclient import NotebookClient

EXECUTOR_ENV = {AUTOPILOT_ENV: "1", "NBAGENT_FRONTEND": "widgets"}
"""How the executor runs a walkthrough: the widgets are rendered (and their state saved in the
notebook) while the autopilot answers what a person would click."""

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


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
STATE_CODE = "import ipywidgets, json; print(json.dumps(ipywidgets.Widget.get_manager_state(drop_defaults=True)))"
"""Asks the kernel for every live widget's state. nbclient keeps only the updates a widget sends
while the cell that made it runs; a turn's panels keep changing after that (a turn started by one
cell runs on while the next cells run), so the state a page shows is taken from the kernel at the
end instead."""


def final_widget_state(client: NotebookClient) -> dict[str, Any]:
    """The kernel's widgets as the widget-state document, run as a cell not kept in the notebook."""
    probe = nbformat.v4.new_code_cell(STATE_CODE)
    client.nb.cells.append(probe)  # nbclient writes the executed cell back into the notebook
    try:
        client.execute_cell(probe, len(client.nb.cells) - 1, store_history=False)
    finally:
        client.nb.cells.pop()
    printed = "".join(out.get("text", "") for out in probe.outputs if out.get("name") == "stdout")
    return json.loads(printed)


def execute(name: str, out: Path) -> Path:
    from nbagent.notebook.demo import make_output_dir, notebook_kernel

    full_name, nb, timeout = _notebook(name)
    work = make_output_dir(out / "work" / full_name)
    with notebook_kernel(nb, work, timeout=timeout, env=EXECUTOR_ENV) as client:
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        nb.metadata["widgets"] = {WIDGET_STATE: final_widget_state(client)}
    # Cells hold magics and top-level await: highlight them as IPython, not Python.
    nb.metadata.setdefault("language_info", {})["pygments_lexer"] = "ipython3"
    target = make_output_dir(out) / f"{full_name}.ipynb"
    nbformat.write(nb, str(target))
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nbagent.examples.walkthroughs")
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="write the notebooks")
    w.add_argument("dir", nargs="?", default="notebooks")
    x = sub.add_parser("execute", help="run the quickstart and the walkthroughs and write the executed copies")
    x.add_argument("--out", default="build/walkthroughs")
    x.add_argument("-j", "--jobs", type=int, default=2, help="notebooks run at once, each in its own process (default 2)")
    x.add_argument("names", nargs="*", help=f"notebooks by name or number, {QUICKSTART} included (default: all)")
    args = parser.parse_args(argv)
    if args.command == "write":
        for path in write(args.dir):
            print(path)
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
