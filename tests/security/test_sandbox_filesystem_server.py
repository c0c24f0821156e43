"""A real third-party server, @modelcontextprotocol/server-filesystem, confined by the sandbox
to the workspace: it is told it may use the whole test folder (its own check would let it
through), and still it cannot write outside the workspace or read a secret planted in the home."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from nbagent.config import Config, McpServerConfig
from nbagent.mcp.manager import McpConnectionManager
from nbagent.protocol import ToolSpec
from nbagent.sandbox import available
from tests.mcp.conftest import NODE_DIR, Answers, call_info

SERVER = NODE_DIR / "node_modules" / "@modelcontextprotocol" / "server-filesystem" / "dist" / "index.js"
SECRET = "fs-secret-" + os.urandom(6).hex()

pytestmark = pytest.mark.skipif(bool(available()), reason=f"no sandbox here: {available()}")


@pytest.fixture
async def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> AsyncIterator[McpConnectionManager]:
    (tmp_path / "home" / ".ssh").mkdir(parents=True)
    (tmp_path / "home" / ".ssh" / "id_rsa").write_text(SECRET)
    (tmp_path / "work").mkdir()
    (tmp_path / "outside").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    config = Config(sandbox_mode=request.param, home=str(tmp_path / "nbhome"), workspace=str(tmp_path / "work"))
    servers = {"files": McpServerConfig(command="node", args=[str(SERVER), str(tmp_path)])}
    manager = McpConnectionManager(servers, lambda event: None, Answers(), tmp_path / "logs", config)
    await manager.start()
    assert manager.list_tools(), "server-filesystem did not start"
    yield manager
    await manager.aclose()


async def _call(manager: McpConnectionManager, tool: str, **arguments: str) -> tuple[bool, str]:
    spec = ToolSpec(name=f"mcp__files__{tool}", server="files", raw_name=tool)
    result = await manager.call_tool(spec, arguments, call_info())
    return result.is_error, " ".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.parametrize("files", ["workspace-write"], indirect=True)
async def test_the_filesystem_server_works_in_the_workspace_and_nowhere_else(files: McpConnectionManager, tmp_path: Path) -> None:
    notes = tmp_path / "work" / "notes.md"
    assert await _call(files, "write_file", path=str(notes), content="hello") == (False, f"Successfully wrote to {notes}")
    failed, text = await _call(files, "read_text_file", path=str(notes))
    assert not failed and "hello" in text
    failed, text = await _call(files, "write_file", path=str(tmp_path / "outside" / "x.md"), content="hello")
    assert failed and not (tmp_path / "outside" / "x.md").exists(), text
    failed, text = await _call(files, "read_text_file", path=str(tmp_path / "home" / ".ssh" / "id_rsa"))
    assert failed and SECRET not in text, text


@pytest.mark.parametrize("files", ["danger-full-access"], indirect=True)
async def test_without_the_sandbox_its_own_check_lets_it_through(files: McpConnectionManager, tmp_path: Path) -> None:
    """The control: the server's own allowed folders do not stop these two; the sandbox did."""
    failed, text = await _call(files, "write_file", path=str(tmp_path / "outside" / "x.md"), content="hello")
    assert not failed and (tmp_path / "outside" / "x.md").exists(), text
    failed, text = await _call(files, "read_text_file", path=str(tmp_path / "home" / ".ssh" / "id_rsa"))
    assert not failed and SECRET in text, text
