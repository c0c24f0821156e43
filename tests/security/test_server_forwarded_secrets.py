"""``nbagent mcp-server`` hides its inner servers' secrets from the outer client as the rollout
does: a server that hands back its token (in a tool's description and in every result) and a
model that repeats it get none of it into the approval elicitation, the log and progress
notifications, or the tool result the caller reads."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import mcp_types as types
import pytest

from nbagent.store import ThreadStore
from tests.server.conftest import MODES, Seen, ServerEnv, connect
from tests.server.conftest import senv as senv  # noqa: F401  (the fixture)

SERVERS = Path(__file__).resolve().parents[1] / "servers"
SECRET = "tok-SECRET-outer-4471"
pytestmark = pytest.mark.timeout(120)


def _approve(params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"decision": "approve"})


@pytest.mark.parametrize("mode", MODES)
async def test_the_outer_client_sees_no_inner_servers_secret(mode: str, senv: ServerEnv) -> None:
    model = senv.script(
        {"text": "Checking.", "tool_calls": [{"name": "mcp__leaky__whoami", "arguments": {"note": {"n": 1}}}]},
        {"text": f"The server said x{SECRET}y."},
    )
    servers = {"leaky": {"command": sys.executable, "args": [str(SERVERS / "leaky.py")],
                         "env": {"LEAKY_TOKEN": SECRET}}}
    seen = Seen()
    server_args = ("--model", model, "--policy", "on-request", "-c", f"mcp_servers={json.dumps(servers)}")
    async with connect("stdio", mode, senv, seen=seen, answer=_approve, server_args=server_args) as client:
        result = await client.call_tool("agent", {"prompt": "who are you"})
    thread_id = result.structured_content["thread_id"]
    outputs = [i for i in ThreadStore(senv.home).load(thread_id).items if i.type == "function_call_output"]
    assert outputs and "[redacted]" in json.dumps(outputs[0].model_dump()), "the tool ran and echoed its secret"
    assert [e.message for e in seen.elicitations if "whoami" in e.message], seen.elicitations
    assert any(isinstance(d, dict) and d.get("event") == "tool_call_end" for d in seen.logs), seen.logs
    shown = json.dumps([
        [e.model_dump() for e in seen.elicitations], seen.logs, seen.progress, result.model_dump(),
    ], default=str)  # fmt: skip
    assert SECRET not in shown
    assert result.structured_content["text"] == "The server said x[redacted]y."
