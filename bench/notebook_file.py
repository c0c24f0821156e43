"""What a large or crowded notebook costs the kernel: ``read_notebook`` from the saved file and
the resume offer over the thread ids of its metadata.

Each measure runs in a fresh Python process (as a kernel would), which reports its wall time and
how far its peak resident memory rose: ``read_notebook`` (no extension, so from the file) of a
notebook of ``--mb`` megabytes (one cell whose output is a base64 image), and
``resume_offer.resumable`` over ``--ids`` distinct well-formed thread ids none of which is a
local thread, as the JupyterLab extension asks it when such a notebook opens.

Run: ``.venv/bin/python bench/notebook_file.py [--mb 300] [--ids 200000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

READ = r"""
import asyncio, os, resource, sys, time
from nbagent.protocol import CallInfo
from nbagent.tools.notebook import NotebookTools

class NoExtension:
    async def available(self):
        return False

before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tools = NotebookTools(NoExtension(), shell=None)
spec = next(s for s in tools.list_tools() if s.name == "read_notebook")
started = time.perf_counter()
result = asyncio.run(tools.call_tool(spec, {}, CallInfo(thread_id="t", turn_id="u", call_id="c")))
took = time.perf_counter() - started
grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(f"{took:.2f} s, peak memory +{grew:.0f} MB, error={result.is_error}: {result.content[0].text[:160]!r}")
"""

OFFER = r"""
import resource, sys, time
from nbagent.notebook.resume_offer import resumable

ids = sys.stdin.read()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
started = time.perf_counter()
offered = resumable(ids)
took = time.perf_counter() - started
grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(f"{took:.2f} s, peak memory +{grew:.0f} MB, offered {len(offered)}")
"""


def big_notebook(path: Path, megabytes: int) -> None:
    chunk = "A" * (1 << 20)
    with open(path, "w", encoding="utf-8") as f:
        f.write('{"cells": [{"id": "c1", "cell_type": "code", "source": "plot()", "metadata": {}, '
                '"execution_count": 1, "outputs": [{"output_type": "display_data", "metadata": {}, '
                '"data": {"text/plain": "<Figure>", "image/png": "')
        for _ in range(megabytes):
            f.write(chunk)
        f.write('"}}]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')


def run(code: str, env: dict[str, str], stdin: str = "") -> str:
    proc = subprocess.run([sys.executable, "-c", code], input=stdin, capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)
    return proc.stdout.strip() or proc.stderr.strip().splitlines()[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=300)
    parser.add_argument("--ids", type=int, default=200_000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        notebook = Path(tmp) / "big.ipynb"
        big_notebook(notebook, args.mb)
        env = dict(os.environ, PYTHONPATH=str(ROOT), NBAGENT_HOME=str(Path(tmp) / "home"), JPY_SESSION_NAME=str(notebook))
        print(f"read_notebook of a {args.mb} MB notebook: {run(READ, env)}")
        ids = json.dumps([f"thread_{n:020x}" for n in range(args.ids)])
        print(f"resume offer over {args.ids:,} thread ids: {run(OFFER, env, ids)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
