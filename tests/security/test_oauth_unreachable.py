"""An HTTP MCP server that cannot be reached is one line in ``nbagent tools``: the sign-in
machinery that wraps every request leaves nothing behind to complain on stderr."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.cli.proc import nbagent


def test_an_unreachable_http_server_is_one_line_and_no_stray_task_error(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (tmp_path / "nbagent.toml").write_text(f'[mcp_servers.far]\nurl = "http://127.0.0.1:{port}/mcp"\n')
    proc = nbagent("tools", home=tmp_path / "home", cwd=tmp_path)
    assert "far" in proc.stdout and "failed" in proc.stdout, proc.stdout
    assert "Traceback" not in proc.stderr and "never retrieved" not in proc.stderr, proc.stderr
