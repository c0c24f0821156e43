"""Write into the cell that started a turn, from whatever task or callback an event arrives in.

ipykernel attributes ``print``/``display`` to the parent message held in context variables.
Session events are emitted from the session's own tasks (created in some earlier cell), so text
output is replayed inside a copy of the context captured when the turn's cell ran.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any


class CellContext:
    def __init__(self) -> None:
        self._ctx = contextvars.copy_context()

    def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return self._ctx.run(fn, *args, **kwargs)
        except RuntimeError as exc:  # already inside this context (a nested call): run in place
            if "already entered" not in str(exc):
                raise
            return fn(*args, **kwargs)
