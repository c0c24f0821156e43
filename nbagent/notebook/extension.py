"""``%load_ext nbagent``: one agent per kernel, its magics, and MCP startup in the background."""

from __future__ import annotations

import asyncio
from typing import Any

from nbagent.notebook import comm_status, transform
from nbagent.notebook.agent import KernelAgent
from nbagent.notebook.magics import AgentMagics
from nbagent.notebook.runner import run_cell

_AGENTS: dict[int, KernelAgent] = {}


def get_agent(shell: Any = None) -> KernelAgent:
    """The kernel's agent (``%load_ext nbagent`` first)."""
    if shell is None:
        from IPython import get_ipython

        shell = get_ipython()
    agent = _AGENTS.get(id(shell))
    if agent is None:
        raise RuntimeError("nbagent is not loaded: run %load_ext nbagent")
    return agent


def _show_startup(agent: KernelAgent) -> None:
    frontend = agent.frontend()
    if frontend != "widgets":
        return  # text front ends: %agent shows the status; failures show in the turn
    from IPython.display import display

    from nbagent.config import ConfigError, load_config
    from nbagent.notebook.startup import StartupView

    servers: list[str] = []
    problem = None
    try:
        servers = [n for n, c in load_config().mcp_servers.items() if c.enabled]
    except ConfigError as exc:  # the session will not open: say why where the servers would show
        problem = str(exc)
    except Exception:
        pass
    view = StartupView(servers, problem)
    agent.watchers.append(view)
    display(view.widget)


def _warm_imports() -> None:
    """Import the heavy modules off the event loop, so the first cell does not stall on them.

    ``jsonschema`` is not among them: importing it pulls in every installed format checker
    (``rfc3987_syntax`` compiles a grammar for seconds), and nothing on the way to a ready
    session or a tool call needs it (``nbagent.mcp.validation`` checks results with ``jsonschema_rs``).
    """
    import importlib
    import threading

    def work() -> None:
        for name in ("nbagent.core.session", "nbagent.notebook.render", "nbagent.notebook.text_render", "jsonschema_rs"):
            try:
                importlib.import_module(name)
            except Exception:
                pass

    threading.Thread(target=work, name="nbagent-warm-imports", daemon=True).start()


def load(ipython: Any) -> None:
    if id(ipython) in _AGENTS:
        return
    agent = _AGENTS[id(ipython)] = KernelAgent(ipython)
    ipython.register_magics(AgentMagics(ipython, agent))

    async def cell(line: str, body: str) -> None:
        await run_cell(agent, line, body)

    transform.install(ipython, cell)
    comm_status.install(getattr(ipython, "kernel", None))  # typed input while a --wait cell runs
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        _warm_imports()
        return  # no loop yet (plain terminal): the session opens with the first %%agent cell
    _show_startup(agent)
    task = agent.open()
    task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)
    # Warmed once the session is open: the same GIL would otherwise slow the opening down.
    task.add_done_callback(lambda _: _warm_imports())


def unload(ipython: Any) -> None:
    agent = _AGENTS.pop(id(ipython), None)
    transform.uninstall(ipython)
    if agent is not None:
        agent.spawn(agent.close()) if _loop_running() else None


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
        return True
    except RuntimeError:
        return False
