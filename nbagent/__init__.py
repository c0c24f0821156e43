"""nbagent: an agent runtime that lives inside a Jupyter kernel."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nbagent._version import __version__

if TYPE_CHECKING:
    from nbagent.core.session import RunResult, Session

__all__ = ["RunResult", "Session", "__version__", "load_ipython_extension", "unload_ipython_extension"]


def __getattr__(name: str) -> Any:
    # Lazy, so `import nbagent` in a kernel does not pull in openai and mcp until used.
    if name in ("Session", "RunResult"):
        from nbagent.core import session

        return getattr(session, name)
    raise AttributeError(name)


def load_ipython_extension(ipython: Any) -> None:
    from nbagent.gcpause import gc_paused

    # A kernel's heap is large by now: a full collection triggered by the many objects an import
    # makes walks all of it (~100 ms of the ~350 ms these imports cost in a kernel; bench/startup.py).
    with gc_paused():
        from nbagent.notebook.extension import load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from nbagent.notebook.extension import unload

    unload(ipython)
