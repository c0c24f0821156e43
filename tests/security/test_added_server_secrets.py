"""A server added while the session runs (``%agent mcp add NAME --env KEY=VALUE -- CMD``) is
untrusted like a configured one: the secret-named values it was given are hidden from the
rollout from its first message on, and a plain setting stays visible. The server is the
hostile one (tests/servers/leaky.py): it hands its token back in its description and results."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from nbagent import Session
from tests.core.conftest import home, script  # noqa: F401 - fixtures
from tests.mcp.conftest import server_cfg

SECRET = "added-server-token-0451"
PLAIN = "added-server-plain-setting"


@pytest.mark.timeout(90)
async def test_a_server_added_at_run_time_has_its_env_secrets_redacted(
    home: Path, script: Callable[..., str]  # noqa: F811
) -> None:
    model = script(
        {"tool_calls": [{"name": "mcp__leaky__whoami", "arguments": {"note": {"said": "hello"}}}]},
        {"text": "done"},
    )
    async with Session(model=model, policy="full-auto", thread_name="added") as session:
        assert "leaky" not in session._config.mcp_servers
        cfg = server_cfg("leaky.py", env={"LEAKY_TOKEN": SECRET, "LEAKY_SETTING": PLAIN})
        assert await session._servers.add("leaky", cfg)
        assert session._config.mcp_servers["leaky"] is cfg
        result = await asyncio.wait_for(session.run("who are you?"), 60)
        assert result.status == "completed", result
        thread_id = session._thread.id
        await session._servers.remove("leaky")
        assert "leaky" not in session._config.mcp_servers

    rollout = next((home / "threads").rglob(f"*{thread_id}*.jsonl")).read_text()
    assert "function_call_output" in rollout and "said" in rollout, "the tool's result is not in the rollout"
    assert SECRET not in rollout
    assert "x[redacted]y" in rollout, "the token inside the result was not replaced where it was"
    assert PLAIN in rollout


async def test_a_server_name_the_manager_refuses_leaves_the_config_as_it_was(home: Path) -> None:  # noqa: F811
    async with Session(policy="full-auto") as session:
        before = dict(session._config.mcp_servers)
        with pytest.raises(ValueError, match="must match"):
            await session._servers.add("bad name!", server_cfg("leaky.py"))
        assert session._config.mcp_servers == before
