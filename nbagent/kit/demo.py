"""``nbagent demo``: run the quickstart headlessly, then say in a few lines what ran and where the
executed copy is; and the notebook kernel and cell loop it, the docs and the walkthroughs share.

``nbagent demo`` and the docs execute a notebook with nobody at it (``EXECUTOR_ENV``): its widgets
rendered, the autopilot answering, and the widgets' state at the end saved in it, so opening the
executed copy shows each approval with its decision.

The kernel is started on IPC sockets in a private temporary folder: nothing listens on TCP, so
jupyter_client's "running over TCP without encryption" warning (which a demo user can do nothing
about) has no reason to appear.
"""

from __future__ import annotations

import errno
import json
import os
import pkgutil
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from nbagent.kit.labels import plural
from nbagent.protocol import ApprovalRecord, ElicitationRecord, FunctionCall, FunctionCallOutput

if TYPE_CHECKING:
    from nbclient import NotebookClient
    from nbformat import NotebookNode

AUTOPILOT_ENV = "NBAGENT_AUTOPILOT"
"""Set (to ``1``) by this executor: the notebook renders its widgets, and nobody is there to
click them, so the quickstart answers instead (``kit.nobody_clicks``). A walkthrough needs no
variable: its own ``AUTOPILOT`` cell says who answers, run whichever way."""
EXECUTOR_ENV = {AUTOPILOT_ENV: "1", "NBAGENT_FRONTEND": "widgets"}
"""How the docs and ``nbagent demo`` execute a notebook with nobody at it: the widgets are
rendered (and their state saved in the notebook) while the notebook's own code answers what a
person would click."""

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
STATE_CODE = "import ipywidgets, json; print(json.dumps(ipywidgets.Widget.get_manager_state(drop_defaults=True)))"
"""Asks the kernel for every live widget's state. nbclient keeps only the updates a widget sends
while the cell that made it runs; a turn's panels keep changing after that (a turn started by one
cell runs on while the next cells run), so the state a page shows is taken from the kernel at the
end instead."""

WidgetState = Literal["final", "nbclient"]
"""Which widget state an executed notebook keeps: the kernel's at the end, or nbclient's capture."""

WORK_DIR = "quickstart-work"
"""Where the quickstart's first cell puts its config, notes and threads (``home/``)."""
OWNED_MARK = ".nbagent-demo"
"""In a work folder ``nbagent demo`` made: the next run may replace it (and only then)."""
QUICKSTART = "nbagent.examples.quickstart:build"
"""The quickstart notebook's builder, found by name: the examples sit on top of nbagent, so
nothing else in the package imports them."""


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


def final_widget_state(client: NotebookClient) -> dict[str, Any]:
    """The kernel's widgets as the widget-state document, run as a cell not kept in the notebook."""
    import nbformat

    probe = nbformat.v4.new_code_cell(STATE_CODE)
    client.nb.cells.append(probe)  # nbclient writes the executed cell back into the notebook
    try:
        client.execute_cell(probe, len(client.nb.cells) - 1, store_history=False)
    finally:
        client.nb.cells.pop()
    printed = "".join(out.get("text", "") for out in probe.outputs if out.get("name") == "stdout")
    return json.loads(printed)


def execute(
    nb: NotebookNode, cwd: Path, *, timeout: int, env: Mapping[str, str] | None = None, widget_state: WidgetState = "final"
) -> NotebookNode:
    """Run every cell of ``nb`` in order in a fresh kernel in ``cwd``; keep the widgets' state in
    the notebook's metadata (so a rendered page shows the panels): the kernel's after the last
    cell (``final``), or what nbclient saw while each cell ran (``nbclient``). A failing cell raises."""
    with notebook_kernel(nb, cwd, timeout=timeout, env=env) as client:
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        if widget_state == "final":
            state = final_widget_state(client)
            if state.get("state"):  # no widget (a headless run): no state, as nbclient does
                nb.metadata["widgets"] = {WIDGET_STATE: state}
        else:
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


def fresh_work_dir(out_dir: Path) -> Path:
    """``out_dir``'s work folder, empty and marked as the demo's: a previous run's threads and
    notes would be counted with this run's. A folder the demo did not make is refused, untouched."""
    work = out_dir / WORK_DIR
    if work.exists() or work.is_symlink():
        if work.is_symlink() or not (work / OWNED_MARK).is_file():
            raise OSError(errno.EEXIST, "exists and nbagent demo did not make it: move it away or pick another "
                          "--output", str(work))
        shutil.rmtree(work)
    work.mkdir()
    (work / OWNED_MARK).write_text("made by nbagent demo: the next run replaces this folder\n", encoding="utf-8")
    return work


def run_demo(output_dir: str | Path = ".", *, timeout: int = 120) -> Path:
    """Execute the quickstart with nbclient in ``output_dir`` with nobody at it (``EXECUTOR_ENV``),
    in a work folder of its own; print a summary; return the executed notebook, which keeps its
    widgets' final state."""
    import nbformat

    out_dir = make_output_dir(output_dir)
    work = fresh_work_dir(out_dir)
    nb = execute(pkgutil.resolve_name(QUICKSTART)(), out_dir, timeout=timeout, env=EXECUTOR_ENV)
    target = out_dir / "00-quickstart.executed.ipynb"
    nbformat.write(nb, str(target))
    print("\n".join(["nbagent demo: the quickstart ran (scripted model, real MCP server)", *summary(work / "home"),
                     f"executed notebook: {target}"]))
    return target
