"""``%agent mcp list | get | add | remove`` in a real kernel: the config file in the kernel's
folder changes (comments kept), and the running session follows it."""

from __future__ import annotations

import asyncio
import contextlib
import html
import re
import sys

import pytest

from tests.mcp.oauth_helpers import follow, serve_oauth
from tests.notebook.harness import SERVERS

pytestmark = pytest.mark.timeout(180)


def test_the_verbs_edit_the_config_file_and_the_running_session(make_kernel, tmp_path):
    kernel, _ = make_kernel({"text": "unused"}, extra="# a comment of mine\n")
    config = tmp_path / "nbagent.toml"
    before = config.read_text()
    kernel.run("import nbagent.notebook as nb; _ = await nb.ready()")

    msg_id, _ = kernel.run(f"%agent mcp add feat --env LEVEL=debug -- {sys.executable} {SERVERS / 'features.py'}")
    out = kernel.wait_output(msg_id, "mcp server feat: ready")
    assert f"Added MCP server 'feat' to {config}" in out
    assert config.read_text().startswith(before) and "[mcp_servers.feat]" in config.read_text()

    _, listing = kernel.run("%agent mcp list")
    rows = {line.split()[0]: line for line in listing.splitlines()[1:]}
    assert set(rows) == {"demo", "feat"} and all(str(config) in row and "ready (" in row for row in rows.values())
    _, shown = kernel.run("%agent mcp get feat")
    assert "env: LEVEL=*****" in shown and "debug" not in shown

    msg_id, _ = kernel.run("%agent mcp remove feat")
    out = kernel.wait_output(msg_id, "mcp server feat removed")
    assert f"Removed MCP server 'feat' from {config}" in out
    assert config.read_text() == before
    assert kernel.eval("sorted(nb.session().snapshot().servers)") == ["demo"]

    for line in ("%agent mcp get nosuch", "%agent mcp import emacs", "%agent mcp add x --url http://h/mcp -- python"):
        _, out = kernel.run(line)
        assert "%agent: " in out and "usage: %agent" in out and "Traceback" not in out, (line, out)


def test_login_shows_the_link_in_the_cell_and_stores_the_tokens(make_kernel, tmp_path):
    with contextlib.contextmanager(serve_oauth)(tmp_path) as server:
        kernel, _ = make_kernel({"text": "unused"})
        kernel.run("import nbagent.notebook as nb; _ = await nb.ready()")
        config = tmp_path / "nbagent.toml"  # written after the session opened: only the login connects
        config.write_text('mcp_oauth_credentials_store = "file"\n' + config.read_text() + f'[mcp_servers.web]\nurl = "{server.url}"\n')

        msg_id, _ = kernel.run("%agent mcp login web")
        links: list[str] = []
        for _ in range(600):  # bounded: the link comes once discovery and registration are done
            kernel.pump(0.1)
            links = [w.state["value"] for w in kernel.widgets.values() if "open this link yourself" in w.state.get("value", "")]
            if links:
                break
        (shown,) = links
        asyncio.run(follow(html.unescape(re.search(r'href="([^"]+)"', shown).group(1))))  # the person consents
        out = kernel.wait_output(msg_id, "Logged in to MCP server 'web'", timeout=60)
        assert "Traceback" not in out
        assert any("signed in to MCP server <b>web</b>" in w.state.get("value", "") for w in kernel.widgets.values())
        assert (tmp_path / "home" / "oauth" / "web.json").is_file()
        _, listing = kernel.run("%agent mcp list")
        assert "oauth (logged in)" in listing
