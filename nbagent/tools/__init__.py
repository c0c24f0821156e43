"""Native tools: the notebook and the kernel as tool sources, through the same router and
approval engine as MCP tools.

A front end wires them into its session::

    notebook_tools, python_tools = native_tools(get_bridge(), calls=lambda: session.snapshot().call_ids)
    session.add_provider(notebook_tools)
    session.add_provider(python_tools)
    policy = shell_policy(load_config(cwd))
    session.add_provider(ShellTools(policy))          # the sandboxed `shell`
    session.add_provider(PatchTools.within(policy))   # `apply_patch`, writing where `shell` may
    with notebook_tools.awaited():      # only around a turn awaited in its cell (--wait)
        await session.run(goal)
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from nbagent.tools.notebook import BridgeClient, NotebookTools
from nbagent.tools.patch import PatchTools
from nbagent.tools.python import PythonTools
from nbagent.tools.shell import ShellTools, shell_policy

__all__ = ["NotebookTools", "PatchTools", "PythonTools", "ShellTools", "native_tools", "shell_policy"]


def native_tools(
    bridge: BridgeClient, shell: Any = None, calls: Callable[[], Collection[str]] | None = None
) -> tuple[NotebookTools, PythonTools]:
    """The notebook tools over ``bridge`` and ``run_python``, for ``shell``; ``calls`` gives the
    session's thread's call ids (``lambda: session.snapshot().call_ids``), the only calls a cell's
    metadata is believed to name."""
    return NotebookTools(bridge, shell=shell, calls=calls), PythonTools(shell=shell)
