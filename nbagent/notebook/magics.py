"""The ``%%agent`` cell magic and the ``%agent`` line magic."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand

from nbagent.notebook.agent import KernelAgent
from nbagent.notebook.commands import run_line
from nbagent.notebook.runner import start_in_background


@magics_class
class AgentMagics(Magics):
    def __init__(self, shell: InteractiveShell, agent: KernelAgent) -> None:
        super().__init__(shell)
        self._agent = agent  # not ``agent``: that name is the magic

    @no_var_expand
    @line_cell_magic
    def agent(self, line: str, cell: str | None = None) -> None:
        """%%agent [-t THREAD] [-m MODEL] [--policy P] [--new] [--wait] [-i]: run the cell as a goal.
        %agent [threads|resume ID|new [NAME]|history|mcp ...|stop|approve ID|deny ID [REASON]]: status and commands.
        """
        if cell is None:
            run_line(self._agent, line)
        else:
            # Reached only when the cell transformer is off (%autoawait off) or when called directly.
            start_in_background(self._agent, line, cell)
