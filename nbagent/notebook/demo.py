"""``nbagent demo``: run the quickstart headlessly, then say in a few lines what ran and where the
executed copy is; and the notebook kernel both it and the walkthroughs run in.

The kernel is started on IPC sockets in a private temporary folder: nothing listens on TCP, so
jupyter_client's "running over TCP without encryption" warning (which a demo user can do nothing
about) has no reason to appear.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from nbagent.notebook.labels import plural
from nbagent.protocol import ApprovalRecord, ElicitationRecord, FunctionCall, FunctionCallOutput

if TYPE_CHECKING:
    from nbclient import NotebookClient
    from nbformat import NotebookNode

WORK_DIR = "quickstart-work"
"""Where the quickstart's first cell puts its config, notes and threads (``home/``)."""


def _tally(counts: Counter[str]) -> str:
    return ", ".join(f"{n} {what}" for what, n in counts.most_common())


def summary(home: Path) -> list[str]:
    """What the threads under ``home`` hold: turns, calls, approvals and answers, one line each."""
    from nbagent.store.threads import ThreadStore

    store = ThreadStore(home)
    turns: Counter[str] = Counter()
    calls = failed = 0
    approvals: Counter[str] = Counter()
    answers: Counter[str] = Counter()
    for row in store.list_threads(limit=1000):
        thread = store.load(row.id)
        turns.update(t.status for t in thread.turns if t.status != "started")
        for item in thread.items:
            if isinstance(item, FunctionCall):
                calls += 1
            elif isinstance(item, FunctionCallOutput) and item.status != "completed":
                failed += 1
            elif isinstance(item, ApprovalRecord):
                approvals[f"{item.decision} by {item.by}"] += 1
            elif isinstance(item, ElicitationRecord):
                answers[f"{item.action} by {item.by}"] += 1
    return [
        f"turns:     {plural(sum(turns.values()), 'turn')}" + (f" ({_tally(turns)})" if turns else ""),
        f"calls:     {plural(calls, 'tool call')}" + (f", {failed} did not complete" if failed else ""),
        f"approvals: {_tally(approvals) or 'none'}",
        f"questions: {_tally(answers) or 'none'}",
    ]


@contextmanager
def notebook_kernel(nb: NotebookNode, cwd: Path, *, timeout: int, env: Mapping[str, str] | None = None) -> Iterator[NotebookClient]:
    """An nbclient client for ``nb`` whose kernel runs in ``cwd`` on IPC sockets in a private
    folder (``env`` is added to this process's environment): cells can then be run one by one."""
    import nbclient
    from jupyter_client.manager import KernelManager

    sockets = tempfile.mkdtemp(prefix="nbagent-nb-")
    km = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(sockets, "kernel"))
    client = nbclient.NotebookClient(nb, km=km, timeout=timeout, resources={"metadata": {"path": str(cwd)}})
    try:
        with client.setup_kernel(env={**os.environ, **(env or {})}):
            yield client
    finally:
        if km.has_kernel:  # a kernel manager passed in is ours to shut down, not nbclient's
            km.shutdown_kernel()
        shutil.rmtree(sockets, ignore_errors=True)


def execute(nb: NotebookNode, cwd: Path, *, timeout: int, env: Mapping[str, str] | None = None) -> NotebookNode:
    """Run every cell of ``nb`` in order in a fresh kernel in ``cwd``; keep the widgets' state in
    the notebook's metadata (so a rendered page shows the panels). A failing cell raises."""
    with notebook_kernel(nb, cwd, timeout=timeout, env=env) as client:
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        client.set_widgets_metadata()
    return nb


def make_output_dir(path: str | Path) -> Path:
    """``path`` resolved and created, or an OSError the CLI prints as one line."""
    out_dir = Path(path).expanduser().resolve()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # the CLI prints it as one line: "PATH: cannot create ... (reason)"
        raise OSError(exc.errno, f"cannot create the output folder ({exc.strerror})", str(out_dir)) from None
    return out_dir


def run_demo(output_dir: str | Path = ".", *, timeout: int = 120) -> Path:
    """Execute the quickstart with nbclient in ``output_dir``; print a summary; return the
    executed notebook."""
    import nbformat

    from nbagent.examples.quickstart import build

    out_dir = make_output_dir(output_dir)
    nb = execute(build(), out_dir, timeout=timeout)
    target = out_dir / "00-quickstart.executed.ipynb"
    nbformat.write(nb, str(target))
    print("\n".join(["nbagent demo: the quickstart ran (scripted model, real MCP server)", *summary(out_dir / WORK_DIR / "home"),
                     f"executed notebook: {target}"]))
    return target
