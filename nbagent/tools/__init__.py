"""Native tools: the notebook and the kernel as tool sources, through the same router and
approval engine as MCP tools.

A front end wires them into its session::

    notebook_tools, python_tools = native_tools(get_bridge())   # nbagent.notebook.bridge
    session.add_provider(notebook_tools)
    session.add_provider(python_tools)
    with notebook_tools.awaited():      # only around a turn awaited in its cell (--wait)
        await session.run(goal)
"""

from __future__ import annotations

from typing import Any

from nbagent.tools.notebook import BridgeClient, NotebookTools
from nbagent.tools.python import PythonTools

__all__ = ["NotebookTools", "PythonTools", "native_tools"]


def native_tools(bridge: BridgeClient, shell: Any = None) -> tuple[NotebookTools, PythonTools]:
    """The notebook tools over ``bridge`` and ``run_python``, for ``shell``."""
    return NotebookTools(bridge, shell=shell), PythonTools(shell=shell)
