"""``python -m nbagent.examples.walkthroughs write [DIR]`` writes the notebooks (default
``notebooks/``); ``execute --out DIR [NAME...]`` runs them as CI and the docs do (widgets rendered,
the autopilot answering) and writes the executed copies, with their widget state, to ``DIR``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import nbformat

from nbagent.examples.walkthroughs import all_walkthroughs, get, write
from nbagent.examples.walkthroughs.kit import AUTOPILOT_ENV

EXECUTOR_ENV = {AUTOPILOT_ENV: "1", "NBAGENT_FRONTEND": "widgets"}
"""How the executor runs a walkthrough: the widgets are rendered (and their state saved in the
notebook) while the autopilot answers what a person would click."""


def execute(name: str, out: Path) -> Path:
    from nbagent.notebook.demo import execute as run_cells
    from nbagent.notebook.demo import make_output_dir

    walkthrough = get(name)
    work = make_output_dir(out / "work" / walkthrough.name)
    nb = run_cells(walkthrough.build(), work, timeout=walkthrough.timeout, env=EXECUTOR_ENV)
    target = make_output_dir(out) / f"{walkthrough.name}.ipynb"
    nbformat.write(nb, str(target))
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m nbagent.examples.walkthroughs")
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="write the notebooks")
    w.add_argument("dir", nargs="?", default="notebooks")
    x = sub.add_parser("execute", help="run walkthroughs and write the executed copies")
    x.add_argument("--out", default="build/walkthroughs")
    x.add_argument("names", nargs="*", help="walkthroughs by name or number (default: all)")
    args = parser.parse_args(argv)
    if args.command == "write":
        for path in write(args.dir):
            print(path)
        return 0
    for name in args.names or [w.name for w in all_walkthroughs()]:
        started = time.monotonic()
        target = execute(name, Path(args.out))
        print(f"{target} ({time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
