"""The kernel front end: magics, live widgets, approval panels, elicitation forms.

``session()`` gives notebook code the kernel's ``Session`` (the same one ``%%agent`` uses),
``frontend()`` says whether a person can click (``widgets``), read (``text``) or nobody is there
(``headless``).
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


__all__: list[Any] = ["frontend", "headless", "ready", "session"]
