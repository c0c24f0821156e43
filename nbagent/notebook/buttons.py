"""The answer buttons of approval panels and elicitation forms, alike in look and behaviour."""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as W

DECISION_CLASS = "nbagent-decision"
"""CSS class of every answer button: the JupyterLab extension hands keyboard focus back to the
notebook after one is clicked (labextension/src/index.ts)."""


def answer_button(label: str, style: str, icon: str = "", tooltip: str = "") -> W.Button:
    """A button with a colour, an icon and room for its whole label."""
    button = W.Button(description=label, button_style=style, icon=icon, tooltip=tooltip, layout=W.Layout(width="auto"))
    button.add_class(DECISION_CLASS)
    return button


def on_answer(button: W.Button, action: Callable[[], object]) -> None:
    """Run ``action`` on a click, then give up the keyboard focus, so Enter does not press the
    button again and Shift+Enter reaches the notebook (ipywidgets' own ``blur``; no page code)."""

    def clicked(_b: W.Button) -> None:
        try:
            action()
        finally:
            button.blur()

    button.on_click(clicked)
