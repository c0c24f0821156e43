"""Where an "Always" for a server added while nbagent runs is kept.

A server ``%agent mcp add`` wrote to a file gets its "Always" in that same file, next to its own
table; a server code handed to the session (``Session(mcp_servers=...)``, ``session._servers.add``)
is in no file, so its "Always" holds for this session only, and a warning says so. No file ever
gets a server table without ``command``/``url``, and none is created where nbagent will not read it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tomllib
from pathlib import Path
from unittest.mock import ANY

import pytest

from nbagent import Session
from nbagent.config import load_config
from nbagent.config.trust import ENV
from nbagent.notebook.agent import KernelAgent
from nbagent.notebook.commands import run_line
from nbagent.protocol import Event
from tests.core.conftest import home, script  # noqa: F401 - fixtures
from tests.mcp.conftest import SERVERS, server_cfg
from tests.security.test_approval_remembered import FrontEnd, approvals
from tests.waiting import until

ECHO = {"tool_calls": [{"name": "mcp__echo__echo", "arguments": {"text": "hi"}}]}
PROJECT = '# my project\napproval_policy = "on-request"\n'


class Warnings(list[str]):
    """Every warning the session emits."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        session.subscribe(self.on)

    def on(self, event: Event) -> None:
        if event.msg.type == "warning":
            self.append(event.msg.message)


async def always_then_again(session: Session) -> tuple[FrontEnd, Warnings, list[tuple[str, str]]]:
    """Two turns calling ``echo``: "Always" at the first ask (a second one would be denied)."""
    front, warned = FrontEnd(session, "always", "deny"), Warnings(session)
    first = await asyncio.wait_for(session.run("call echo"), 60)
    second = await asyncio.wait_for(session.run("call echo again"), 60)
    assert first.ok and second.ok
    return front, warned, approvals(first.items + second.items)


async def test_always_for_a_server_handed_to_the_session_holds_for_the_session_and_leaves_the_files_alone(
    home: Path, script  # noqa: F811
) -> None:
    work = Path.cwd()
    (work / "nbagent.toml").write_text(PROJECT)
    model = script(ECHO, {"text": "one"}, ECHO, {"text": "two"})
    async with Session(model=model, mcp_servers={"echo": server_cfg("echo.py")}, interactive=True) as session:
        front, warned, said = await always_then_again(session)
    assert len(front.asked) == 1, "the 'Always' was not kept for the rest of the session"
    assert said == [("always", "user"), ("approve", "remembered")]
    assert (work / "nbagent.toml").read_text() == PROJECT
    assert not (home / "config.toml").exists()
    load_config(work)  # the folder still loads
    assert [w for w in warned if "'always'" in w] == [
        "mcp__echo__echo comes from MCP server 'echo', which was given to this session, not read from a config"
        + " file: 'always' applies to this session only"
    ]

    async with Session(model=script(ECHO, {"text": "one"}), mcp_servers={"echo": server_cfg("echo.py")},
                       interactive=True) as session:  # fmt: skip
        front = FrontEnd(session, "deny")
        await asyncio.wait_for(session.run("call echo"), 60)
    assert len(front.asked) == 1, "a session-only 'Always' outlived its session"


async def test_always_for_a_server_handed_in_under_a_name_a_file_uses_is_not_written_to_that_file(
    home: Path, script  # noqa: F811
) -> None:
    home.mkdir()
    user = home / "config.toml"
    user.write_text(f'[mcp_servers.echo]\ncommand = "{sys.executable}"\nargs = ["{SERVERS / "echo.py"}", "2"]\n')
    before = user.read_text()
    async with Session(model=script(ECHO, {"text": "one"}, ECHO, {"text": "two"}), interactive=True) as session:
        await session._servers.ready()
        await session._servers.add("echo", server_cfg("echo.py"))  # another program under the file's name
        front, warned, _ = await always_then_again(session)
    assert len(front.asked) == 1
    assert user.read_text() == before
    assert any("MCP server 'echo', which was given to this session, not read" in w for w in warned)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("user", [True, False], ids=["user-file-untrusted-folder", "project-file-trusted-folder"])
async def test_always_for_a_server_added_with_mcp_add_goes_next_to_it_in_the_file_it_was_added_to(
    home: Path, script, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], user: bool  # noqa: F811
) -> None:
    if user:
        monkeypatch.setenv(ENV, "")  # the folder is someone else's: its files are not read
    work = Path.cwd()
    target = home / "config.toml" if user else work / "nbagent.toml"
    model = script(ECHO, {"text": "one"}, ECHO, {"text": "two"})
    agent = KernelAgent(shell=None, session_factory=lambda: Session(model=model, interactive=True))
    try:
        session = await agent.ready()
        run_line(agent, f"mcp add {'--user ' if user else ''}echo -- {sys.executable} {SERVERS / 'echo.py'}")
        await until(lambda: "mcp server echo: ready" in capsys.readouterr().out, "the added server to start")
        front, warned, said = await always_then_again(session)
    finally:
        await agent.close()
    assert len(front.asked) == 1 and said == [("always", "user"), ("approve", "remembered")]
    assert f"'always' for echo written to {target}" in warned
    if user:
        assert list(work.iterdir()) == [], "a file was created in the untrusted folder"
    echo = tomllib.loads(target.read_text())["mcp_servers"]["echo"]
    assert echo["command"] == sys.executable
    assert echo["tools"]["echo"]["approval_mode"] == "approve"

    async with Session(model=script(ECHO, {"text": "one"}), interactive=True) as session:
        front = FrontEnd(session, "deny")
        result = await asyncio.wait_for(session.run("call echo"), 60)
    assert front.asked == [] and result.ok, "the next session asked again"


@pytest.mark.timeout(120)
async def test_always_for_a_server_of_mcp_json_outlives_that_servers_removal(home: Path, script) -> None:  # noqa: F811
    """``.mcp.json`` has no key for an "Always": it goes to the folder's ``nbagent.toml`` as a table
    of the server's tools alone. Once the server leaves ``.mcp.json``, that table defines nothing:
    the folder still loads, and a warning names the file and the server."""
    work = Path.cwd()
    server = {"command": sys.executable, "args": [str(SERVERS / "echo.py")]}
    (work / ".mcp.json").write_text(json.dumps({"mcpServers": {"echo": server}}))
    async with Session(model=script(ECHO, {"text": "one"}, ECHO, {"text": "two"}), interactive=True) as session:
        _, warned, said = await always_then_again(session)
    target = work / "nbagent.toml"
    assert said == [("always", "user"), ("approve", "remembered")] and f"'always' for echo written to {target}" in warned
    assert tomllib.loads(target.read_text())["mcp_servers"]["echo"] == {
        "tools": {"echo": {"approval_mode": "approve", "approved_definition": ANY}}
    }

    (work / ".mcp.json").write_text(json.dumps({"mcpServers": {}}))
    config = load_config(work)
    assert "echo" not in config.mcp_servers
    assert [w for w in config.warnings if "echo" in w] == [
        f"{target}: [mcp_servers.echo] names no command or url, and no other config file defines MCP server "
        "'echo' (it holds only tools): ignored"
    ]
    async with Session(model=script({"text": "fine"})) as session:
        assert (await asyncio.wait_for(session.run("hello"), 60)).ok
