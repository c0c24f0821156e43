"""``%agent serve``: the live notebook session's tools over streamable HTTP, for outside agents.

An outside agent (Codex, Claude Code, ...) connects with a bearer token and calls the same
catalogue the session's model sees: the notebook tools and the session's MCP tools under their
model-visible names. Each call goes through ``Session.call_tool``, so it shows in the notebook
as a tool card, asks through the same approval panels and obeys the same policy. In a kernel
with no notebook UI (driven by jupyter_client alone) no panel can be clicked: a call that needs
approval is declined at once, saying so, instead of waiting for an answer that cannot come.

Runs as a task on the kernel's own event loop (``uvicorn.Server.serve``), loopback only.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server

from nbagent._version import __version__
from nbagent.config.requirements import load_requirements
from nbagent.kit.http import HttpHandle, check_bind, check_token, http_app, new_token, start_http
from nbagent.mcp.convert import output_to_mcp, tool_to_mcp
from nbagent.protocol import CallTool, ListMcpTools, McpListToolsResponse, ToolCallEnd
from nbagent.secrets import add_process_secret

if TYPE_CHECKING:
    from nbagent.core.session import Session

TOKEN_ENV = "NBAGENT_NOTEBOOK_TOKEN"
SERVER_NAME = "nbagent_notebook"


@dataclass
class NotebookServerHandle(HttpHandle):
    """``url``, ``token`` and ``await stop()``; ``snippets()`` for the outside agent's config.

    The token is kept in ``token_file`` (mode 0600) and never printed: what ``%agent serve``
    prints lands in the saved notebook.
    """

    token_file: Path | None = None
    ui: bool = True
    """Whether a notebook UI shows the approval panels (see ``start_notebook_server``)."""

    def snippets(self, name: str = SERVER_NAME) -> dict[str, str]:
        return connection_snippets(self.url, self.token_file, name=name)

    async def stop(self) -> None:
        await super().stop()
        if self.token_file is not None:
            self.token_file.unlink(missing_ok=True)


def _write_token(directory: Path, port: int, token: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = directory / f"notebook-server-{port}.token"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token)
    return path


def build_notebook_server(session: Session, *, ui: bool = True) -> Server[Any]:
    """An SDK server whose catalogue is the session's (``ListMcpTools``), re-read on every
    listing; ``ui`` as for ``start_notebook_server``."""
    interactive = None if ui else False  # None: whatever the session says

    # The caller sees what the thread's rollout holds: an op's answer comes redacted, so a
    # server's secret in a description or a result is hidden, as in the notebook's own cards.
    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        listed = await session.perform(ListMcpTools(complete=True))
        assert isinstance(listed, McpListToolsResponse)
        return types.ListToolsResult(tools=[tool_to_mcp(spec) for spec in listed.tools])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        ended = await session.perform(CallTool(name=params.name, arguments=dict(params.arguments or {}), interactive=interactive))
        assert isinstance(ended, ToolCallEnd)
        return output_to_mcp(ended)

    return Server(SERVER_NAME, version=__version__, title="nbagent notebook",
                  instructions="Tools of a live Jupyter notebook session run by nbagent. Calls appear in the "
                               "notebook and may wait for its user's approval.",
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def start_notebook_server(
    session: Session, *, host: str = "127.0.0.1", port: int = 0, token: str | None = None, ui: bool = True
) -> NotebookServerHandle:
    """Serve ``session``'s tools on the running (kernel) loop; returns once it listens.

    ``ui=False``: no notebook UI shows the approval panels (``frontend_kind`` says ``headless``),
    so no one can answer an ask: each is settled at once as such, and the caller reads why."""
    load_requirements().check_switch("allow_serve", "%agent serve")
    check_bind(host, allow_remote=False)
    token = check_token(token, "token=") if token else new_token()
    add_process_secret(token)  # a caller may send it back in arguments: rollouts redact it
    app = http_app(build_notebook_server(session, ui=ui), token, bind_host=host)
    handle = await start_http(app, host=host, port=port, token=token, signals=False)
    token_file = _write_token(session.snapshot().home / "run", handle.port, token)
    return NotebookServerHandle(url=handle.url, token=token, host=handle.host, port=handle.port,
                                _server=handle._server, _task=handle._task, token_file=token_file, ui=ui)


def connection_snippets(url: str, token_file: Path | None, *, name: str = SERVER_NAME) -> dict[str, str]:
    """What to paste where: Codex ``config.toml``, a ``.mcp.json``, and the shell line that puts
    the token into ``$NBAGENT_NOTEBOOK_TOKEN`` from its private file.

    Both configs read the token from the environment, so it is written into neither.
    """
    codex = f'[mcp_servers.{name}]\nurl = "{url}"\nbearer_token_env_var = "{TOKEN_ENV}"\n'
    mcp_json = json.dumps({"mcpServers": {name: {"type": "http", "url": url,
                                                "headers": {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"}}}},
                          indent=2)
    env = f'export {TOKEN_ENV}="$(cat {shlex.quote(str(token_file))})"' if token_file else f"export {TOKEN_ENV}=..."
    return {"codex_config_toml": codex, "mcp_json": mcp_json, "env": env}


def describe(handle: NotebookServerHandle) -> str:
    """The text ``%agent serve`` prints."""
    s = handle.snippets()
    return (f"nbagent is serving this notebook's tools at {handle.url} (loopback only).\n"
            f"1. In the shell that starts the outside agent:\n   {s['env']}\n"
            f"2a. Codex, in ~/.codex/config.toml:\n{s['codex_config_toml']}\n"
            f"2b. Claude Code and others, in .mcp.json:\n{s['mcp_json']}\n"
            + ("" if handle.ui else "No notebook UI detected: no approval panel can be clicked here, so a call that "
                                    "needs approval is declined at once, saying why.\n")
            + "Stop with: %agent serve --stop")
