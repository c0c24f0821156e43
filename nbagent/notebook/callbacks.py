"""Widget callbacks that cannot fail where nobody sees it.

ipywidgets catches an exception raised in an ``on_click`` or ``observe`` callback and prints its
traceback into the comm message's context, which JupyterLab drops (DESIGN §9): the button just
seems dead. Every callback of nbagent's widgets goes through ``guarded``, which shows the error in
the widget itself (and logs it) so the user sees why nothing happened.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from nbagent.notebook.html import COLORS, esc

logger = logging.getLogger("nbagent.notebook")


def error_html(action: str, exc: BaseException) -> str:
    return f"<div style='color:{COLORS['error']}'>{esc(action)} failed: {esc(type(exc).__name__)}: {esc(exc)}</div>"


def guarded(action: str, show: Callable[[str], None]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: run the callback; on an exception call ``show(html)`` with the error instead."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def callback(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except Exception as exc:
                logger.exception("%s failed", action)
                try:
                    show(error_html(action, exc))
                except Exception:  # the widget itself is broken: the log has it
                    pass
                return None

        return callback

    return wrap
