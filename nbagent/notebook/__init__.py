"""The kernel front end: magics, live widgets, approval panels, elicitation forms.

``session()`` gives notebook code the kernel's ``Session`` (the same one ``%%agent`` uses),
``frontend()`` says whether a person can click (``widgets``), read (``text``) or nobody is there
(``headless``); ``answers_asks()`` says the notebook's own code answers in a person's place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nbagent.core.session import Session


def session() -> Session:
    """The kernel's open session (after ``%load_ext nbagent`` and its startup)."""
    from nbagent.notebook.extension import get_agent

    agent = get_agent()
    if agent.session is None:
        raise RuntimeError(agent.error or "the nbagent session is still opening; run this cell again in a moment")
    return agent.session


async def ready() -> Session:
    """Await the kernel's session: ``s = await nbagent.notebook.ready()``."""
    from nbagent.notebook.extension import get_agent

    return await get_agent().ready()


def frontend() -> str:
    from nbagent.notebook.extension import get_agent

    return get_agent().frontend()


def headless() -> bool:
    return frontend() == "headless"


def answers_asks(on: bool = True) -> None:
    """Say that this notebook's code answers approvals and questions: a subscriber that submits
    ``ApprovalDecision`` / ``ElicitationResponse`` (an autopilot). With no notebook UI (nbconvert,
    papermill, nbclient) a ``%%agent`` turn then puts its asks to that code, each waiting at most
    ``$NBAGENT_HEADLESS_ASK_TIMEOUT`` s; without it, every ask is declined at once. Either way
    the turn keeps the notebook's own policy."""
    from nbagent.notebook.extension import get_agent

    get_agent().code_answers = on


__all__: list[Any] = ["answers_asks", "frontend", "headless", "ready", "session"]
