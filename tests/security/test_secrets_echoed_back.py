"""Secrets handed back where nbagent did not expect text: a failing MCP server printing the token
it was given on its stderr, and a model server putting the API key in a call's name and id.
None of it reaches the rollout, the events a front end shows, the terminal or the model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from nbagent import Session
from nbagent.config import Config, McpServerConfig, ModelProviderConfig
from nbagent.protocol import Event
from tests.security.store_env import nbagent

TOKEN = "svc-tok-0123456789abcdef"
API_KEY = "sk-echoed-key-0123456789"
PRINTS_ITS_TOKEN_AND_EXITS = "import os, sys; print('auth failed for', os.environ['SVC_API_TOKEN'], file=sys.stderr); sys.exit(1)"
DIES_MID_CALL = '''
import os, sys
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("dying")


@mcp.tool()
def fetch() -> str:
    """Fail the way a real client library does: the token in the message, then exit."""
    print("401 for token", os.environ["SVC_API_TOKEN"], file=sys.stderr, flush=True)
    os._exit(1)


mcp.run()
'''


def test_a_server_that_prints_its_token_as_it_fails_to_start_shows_it_nowhere(tmp_path: Path) -> None:
    (tmp_path / "nbagent.toml").write_text(
        f"[mcp_servers.svc]\ncommand = {json.dumps(sys.executable)}\nargs = ['-c', {json.dumps(PRINTS_ITS_TOKEN_AND_EXITS)}]\n"
        f'env = {{ SVC_API_TOKEN = "{TOKEN}" }}\n'
    )
    home = tmp_path / "home"
    tools = nbagent("tools", home=home, cwd=tmp_path)
    assert "svc" in tools.stdout and "auth failed for [redacted]" in tools.stdout, tools.stdout
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [{"text": "hello"}]}))
    run = nbagent("run", "-m", f"replay:{script}", "--json", "hi", home=home, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    failed = [e for e in map(json.loads, run.stdout.splitlines()) if e["type"] == "mcp_startup_update" and e["status"] == "failed"]
    assert failed and "auth failed for [redacted]" in failed[0]["stderr_tail"]
    for shown in (tools.stdout, tools.stderr, run.stdout, run.stderr):
        assert TOKEN not in shown


async def test_a_server_that_prints_its_token_as_it_dies_mid_call_sends_the_model_none(openai_server, tmp_path: Path) -> None:
    server = tmp_path / "dying.py"
    server.write_text(DIES_MID_CALL)
    openai_server.script([{"tool_calls": [{"name": "mcp__svc__fetch", "arguments": {}}]}, {"text": "it failed"}])
    config = Config(
        model="m", model_provider="local", approval_policy="full-auto", home=str(tmp_path / "home"),
        model_providers={"local": ModelProviderConfig(base_url=openai_server.base_url, wire_api="chat")},
        mcp_servers={"svc": McpServerConfig(command=sys.executable, args=[str(server)], env={"SVC_API_TOKEN": TOKEN})},
    )
    config.api_key = API_KEY
    async with Session(config=config) as session:
        result = await session.run("fetch it")
    (told,) = [m["content"] for m in openai_server.requests[1]["messages"] if m.get("role") == "tool"]
    assert "closed the connection" in told and "401 for token [redacted]" in told
    assert TOKEN not in json.dumps(openai_server.requests) and result.text == "it failed"


async def test_a_model_that_puts_the_api_key_in_a_calls_name_and_id_records_and_shows_neither(
    openai_server, tmp_path: Path,
) -> None:
    openai_server.script([
        {"tool_calls": [{"name": API_KEY, "call_id": f"call_{API_KEY}", "arguments": {}}]},
        {"text": "done"},
    ])  # fmt: skip
    home = tmp_path / "home"
    config = Config(
        model="m", model_provider="local", approval_policy="full-auto", home=str(home),
        model_providers={"local": ModelProviderConfig(base_url=openai_server.base_url, wire_api="responses")},
    )
    config.api_key = API_KEY
    events: list[Event] = []
    async with Session(config=config) as session:
        session.subscribe(events.append)
        result = await session.run("go")
    assert result.text == "done"
    (told,) = [i["output"] for i in openai_server.requests[1]["input"] if i.get("type") == "function_call_output"]
    assert "unknown tool '[redacted]'" in told
    rollout = (home / "threads" / f"{result.thread_id}.jsonl").read_text()
    shown = json.dumps([e.model_dump(mode="json") for e in events])
    assert API_KEY not in rollout and API_KEY not in shown
    assert '"call_id":"call_[redacted]"' in rollout


def test_a_password_in_a_providers_base_url_is_a_secret(openai_server, tmp_path: Path) -> None:
    """``http://user:PASSWORD@host/v1`` is sent as a Basic header: the rollout and what
    ``nbagent run`` prints (the model's label names the URL) hide the password as they hide a key."""
    password = "hunter2-url-pw-0173"
    url = openai_server.base_url.replace("http://", f"http://me:{password}@", 1)
    (tmp_path / "nbagent.toml").write_text(
        f'model = "m"\nmodel_provider = "local"\n[model_providers.local]\nbase_url = "{url}"\nwire_api = "chat"\n'
    )
    openai_server.script([{"text": f"the url was {url}"}])
    home = tmp_path / "home"
    run = nbagent("run", "--json", "hi", home=home, cwd=tmp_path, OPENAI_API_KEY="sk-unused-0123456789")
    assert run.returncode == 0, run.stderr
    rollouts = "".join(p.read_text() for p in (home / "threads").glob("*.jsonl"))
    assert "me:[redacted]@" in run.stdout and "me:[redacted]@" in rollouts
    assert password not in run.stdout + run.stderr + rollouts
