"""What a walkthrough's cells import: a scratch workspace, the autopilot that answers the panels
(on unless the notebook's ``AUTOPILOT`` cell says otherwise), the running example's project, and
the exercise check.

Kept small and visible on purpose: a reader should be able to open this file from a cell and see
there is no trick in it.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Any

from nbagent.config.edit import record_trust
from nbagent.kit.demo import AUTOPILOT_ENV

if TYPE_CHECKING:
    from nbagent.core.session import Session
    from nbagent.protocol import Event


def data(name: str) -> Path:
    """A file shipped with the walkthroughs (a replay script), as a path."""
    return Path(str(files("nbagent.examples.walkthroughs") / name))


def workspace(name: str, config: str = "") -> Path:
    """Make ``./NAME-work``, move into it, keep threads and logs inside (``$NBAGENT_HOME``), and
    write ``config`` as its ``nbagent.toml`` and trust the folder (in that home's
    ``config.toml``: ``nbagent.config.trust``); print the config and return the folder.

    ``$python`` in ``config`` becomes this kernel's interpreter (to start the example MCP servers)
    and ``$data`` the folder of the walkthroughs' files, both as TOML strings.
    """
    work = Path(f"{name}-work").resolve()
    work.mkdir(exist_ok=True)
    os.chdir(work)
    os.environ["NBAGENT_HOME"] = str(work / "home")
    text = Template(config).substitute(python=json.dumps(sys.executable), data=json.dumps(str(data(""))))
    (work / "nbagent.toml").write_text(text)
    record_trust(work, "trusted")  # written here, so trusted: a folder's config is read only then
    print(text.strip())
    return work


CALC = {
    "calc/__init__.py": "from calc.core import add\n",
    "calc/core.py": 'def add(a, b):\n    """The sum of a and b."""\n    return a - b\n',
    "tests/test_core.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
}
"""The running example's project ("fix a failing test"): a package whose ``add`` subtracts, and
the test that catches it."""


def calc_project(folder: Path) -> dict[str, str]:
    """Write ``CALC`` into ``folder``; return its files (name -> text), as written."""
    for name, text in CALC.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return dict(CALC)


def nobody_clicks() -> bool:
    """True when no person is at the notebook: a headless run, or the walkthrough executor."""
    import nbagent.notebook as nb

    return os.environ.get(AUTOPILOT_ENV) == "1" or nb.headless()


_answering: list[Callable[[], None]] = []
"""Unsubscribes the autopilot that is answering, if one is."""


def autopilot(session: Session, answer: Callable[[Any], Any | None], *, on: bool) -> bool:
    """When ``on`` (the notebook's ``AUTOPILOT`` cell), answer each approval and question with
    ``answer(msg)``: an ``ApprovalDecision`` / ``ElicitationResponse`` (the very ops the buttons
    send) or None to leave it; and tell the kernel so (``nbagent.notebook.answers_asks``), since
    with no notebook UI it declines every ask at once unless notebook code answers. Off, a person
    clicks; print what that means here. Returns ``on``."""
    import nbagent.notebook as nb

    for stop in _answering:  # this cell run again: the switch as it is now, and one autopilot
        stop()
    _answering.clear()
    nb.answers_asks(on)
    if not on:
        who = ("no notebook UI here, so nobody can click: every call that needs approval, and every question, "
               "is declined at once, and the check cells say where the story differs" if nb.headless()
               else "you answer each approval panel and question by clicking")
        print(f"autopilot off: {who}")
        return False

    def on_event(event: Event) -> None:
        if event.msg.type in ("approval_requested", "elicitation_requested"):
            op = answer(event.msg)
            if op is not None:
                session.submit(op.model_copy(update={"by": "code"}))  # recorded as code's, not a person's

    _answering.append(session.subscribe(on_event))
    return True


def claim(holds: bool, said: str, *, otherwise: str) -> None:
    """Back a sentence of the prose with this run: print ``said`` when it ``holds``; else fail the
    notebook, saying what the run did instead (``otherwise``), so no text claims an outcome the
    run did not have."""
    if not holds:
        raise AssertionError(f"The text above says {said}, but in this run {otherwise}.")
    print(f"checked: {said}")


def check(answer: Any, expected: Any, *, hint: str, why: str) -> None:
    """The exercise check: say how to start while ``answer`` is still ``...``, raise with ``hint``
    when it is wrong, print ``why`` when it is right. ``expected`` is a value, or a predicate on
    the answer; compute it from the live runtime where you can."""
    if answer is Ellipsis:
        print("Exercise: replace `answer = ...` in the cell above with your answer, run it, then run this cell.")
        return
    right = expected(answer) if callable(expected) else answer == expected
    if not right:
        raise AssertionError(f"Not yet: {hint}")
    print(f"Right. {why}")
