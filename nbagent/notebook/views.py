"""What the agent routes events to, and the one place a turn's display is made for this front end.

Two displays implement ``TurnDisplay``: ``render.WidgetTurn`` (ipywidgets) and
``text_render.TextTurn`` (a terminal or a headless run). Both are imported only when one is made,
so loading the extension does not pay for ipywidgets.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Protocol, Unpack

from nbagent.kit.turn import Header
from nbagent.notebook.frontend_kind import Frontend
from nbagent.protocol import Event, Op, PatchChange

HEADLESS_ASK_TIMEOUT = float(os.environ.get("NBAGENT_HEADLESS_ASK_TIMEOUT", "60"))
"""Seconds an ask of a headless turn waits before it is settled as unanswered (by timeout)."""


class View(Protocol):
    """Anything the agent feeds events to: a turn's display, a startup status."""

    def handle(self, event: Event) -> None: ...


class TurnDisplay(View, Protocol):
    """One turn's display in its cell."""

    done: bool

    def set_header(self, **header: Unpack[Header]) -> None:
        """The session's real model, thread and policy, once it is open."""

    def handle_queued(self) -> None:
        """The turn waits behind the running one."""


class TurnHost(Protocol):
    """What a turn's display needs of the agent that shows it: which front end draws it, and
    where its buttons send an answer or a stop (``KernelAgent``)."""

    def frontend(self) -> Frontend: ...

    def submit(self, op: Op) -> object: ...

    def stop(self, turn_id: str | None = None) -> bool: ...

    def undo(self, turn_id: str, report: Callable[[bool, str], None]) -> None: ...

    async def preview(self, tool: str, arguments: dict[str, Any]) -> list[PatchChange]: ...


def show_turn(agent: TurnHost, header: Header, *, turn_id: str | None, wait: bool = False, note: str | None = None) -> TurnDisplay:
    """Make and show the display of the turn ``turn_id`` in the running cell; ``turn_id=None`` is
    the serving cell's display of calls from outside agents (``%agent serve``), which has no turn
    of its own to stop and asks nothing at a prompt.

    ``wait``: the cell awaits the turn, so a terminal may ask at a stdin prompt.
    """
    frontend = agent.frontend()
    if frontend == "widgets":
        from IPython.display import display

        from nbagent.notebook.render import WidgetTurn

        stop = (lambda: agent.stop(turn_id)) if turn_id is not None else None
        undo = (lambda report: agent.undo(turn_id, report)) if turn_id is not None else None
        view = WidgetTurn(lambda o: agent.submit(o), stop=stop, undo=undo, note=note, preview=agent.preview, **header)
        if turn_id is None:
            view.status.value = "calls from outside agents appear here"
            view.stop_button.layout.display = "none"
        display(view.widget)
        return view
    from nbagent.notebook.text_render import TextTurn

    if turn_id is None:
        return TextTurn(lambda o: agent.submit(o), note=note, **header)
    return TextTurn(
        lambda o: agent.submit(o),
        note=note,
        prompt=input if frontend == "text" and wait else None,
        stream_deltas=frontend == "text",
        **header,
    )
