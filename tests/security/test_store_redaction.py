"""Redaction removes secrets from history on disk, and nothing else.

A server's ``env`` holds settings (``NODE_ENV = "production"``) as well as secrets; only values
that are secrets by what they are (API keys, bearer tokens, header values) or by their name
(``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*CREDENTIAL*``, at least 8 characters)
are redacted, and never a field of nbagent's own vocabulary (types, statuses, decisions, ``by``,
ids). Checked on the bytes of the rollout and of ``state.sqlite`` with its WAL.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from nbagent import Session
from nbagent.config import McpServerConfig
from nbagent.kit.notebook_server import start_notebook_server
from nbagent.protocol import (
    ApprovalDecision,
    ApprovalRecord,
    AssistantMessage,
    Event,
    FunctionCall,
    FunctionCallOutput,
    ItemRecord,
    ThreadMeta,
    TurnRecord,
    UserMessage,
)
from nbagent.secrets import REDACTED
from nbagent.store import RolloutWriter, ThreadStore, read_rollout
from tests.security.store_env import SERVERS, cli_env, disk_bytes

# Settings, not secrets: they must survive in prompts, outputs and records.
SETTINGS = {"NODE_ENV": "production", "ROLE": "user", "MODE": "approve", "REGION": "eu-west-1-production",
            "LOG_LEVEL": "debug", "APPROVAL": "approve_session"}
# Secrets by name (case-insensitive), with hostile characters.
SECRETS = {
    "API_KEY": "sk-live-0123456789abcdef",
    "github_token": 'ghp_"quoted\\back/slash',
    "Db_Password": "hunter2hunter2",
    "CLIENT_SECRET": "s3cr3t-\u202eevil-\u00e9t\u00e9",
    "GCP_CREDENTIALS": '{"private_key": "-----BEGIN-----"}',
}
# Secrets whose value is a word of nbagent's vocabulary: free text loses them, records do not.
VOCABULARY_SECRETS = {"AUTH_TOKEN": "completed", "SIGNING_KEY": "remembered", "SESSION_SECRET": "approve_session"}
# Too short to be a secret (redacting them would cut words out of every line).
SHORT = {"PIN_PASSWORD": "abc1234", "KEY": "x"}


def forms(secret: str) -> list[bytes]:
    """How a value may appear in a JSON line: plain, escaped, escaped twice (inside a JSON string)."""
    once = json.dumps(secret)[1:-1]
    return [secret.encode(), once.encode(), json.dumps(secret, ensure_ascii=False)[1:-1].encode(),
            json.dumps(once)[1:-1].encode()]


async def test_settings_in_a_server_env_stay_in_history_and_secrets_do_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("NBAGENT_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    env = {**SETTINGS, **SECRETS, **VOCABULARY_SECRETS, **SHORT}
    server = McpServerConfig(command=sys.executable, args=[str(SERVERS / "features.py")], env=env)
    prompt = "deploy to production as user, mode approve, region eu-west-1-production (PIN abc1234)"
    leak = " ".join(SECRETS.values())
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [
        {"tool_calls": [{"name": "mcp__feat__delete_note", "arguments": {"key": f"production {SECRETS['API_KEY']}"}}]},
        {"text": f"deployed to production; the run completed and is remembered; {leak}"},
    ]}))
    async with Session(model=f"replay:{script}", policy="untrusted", mcp_servers={"feat": server},
                       interactive=True) as session:

        def approve(event: Event) -> None:
            if event.msg.type == "approval_requested":
                session.submit(ApprovalDecision(call_id=event.msg.call_id, decision="approve_session",  # type: ignore[union-attr]
                                                message="user approves production"))

        session.subscribe(approve)
        result = await asyncio.wait_for(session.run(prompt), 60)
        assert result.ok, result.error
        thread_id = session._thread.id
        live = disk_bytes(home)  # the WAL is still there while the session runs
    data = disk_bytes(home) + live
    for secret in SECRETS.values():
        for form in forms(secret):
            assert form not in data, (secret, form)
    loaded = ThreadStore(home).load(thread_id)
    assert loaded.warnings == []
    items = {type(i): i for i in loaded.items}
    assert items[UserMessage].text == prompt  # type: ignore[attr-defined]
    approval = items[ApprovalRecord]
    assert (approval.decision, approval.by, approval.message) == ("approve_session", "user", "user approves production")  # type: ignore[attr-defined]
    assert approval.arguments == {"key": f"production {REDACTED}"}  # type: ignore[attr-defined]
    call = items[FunctionCall]
    assert call.name == "mcp__feat__delete_note" and call.server == "feat"  # type: ignore[attr-defined]
    assert items[FunctionCallOutput].status == "completed"  # type: ignore[attr-defined]
    text = items[AssistantMessage].text  # type: ignore[attr-defined]
    assert text.startswith(f"deployed to production; the run {REDACTED} and is {REDACTED}; ")
    assert [t.status for t in loaded.turns] == ["started", "completed"]
    assert loaded.turns[0].policy == "untrusted"
    row = ThreadStore(home).list_threads()[0]
    assert row.last_prompt == prompt


VOCABULARY = ["thread_meta", "user_message", "assistant_message", "function_call", "function_call_output",
              "approval", "elicitation", "completed", "approve_session", "remembered", "interrupt",
              "on-request", "full-auto", "untrusted", "notebook_server", "call_12345678", "turn_abcdef12",
              "item_abcdef12", "thread_abcdef12", "mcp__feat__delete_note", "accept_all"]


@pytest.mark.parametrize("secret", VOCABULARY)
def test_a_secret_equal_to_a_vocabulary_word_never_changes_a_record(tmp_path: Path, secret: str) -> None:
    path = tmp_path / "t.jsonl"
    lines = [
        ThreadMeta(thread_id="thread_abcdef12", name=f"named {secret}"),
        TurnRecord(turn_id="turn_abcdef12", status="started", entry="notebook_server", policy="on-request"),
        ItemRecord(item=UserMessage(id="item_abcdef12", turn_id="turn_abcdef12", text=f"say {secret}")),
        ItemRecord(item=FunctionCall(turn_id="turn_abcdef12", call_id="call_12345678", name="mcp__feat__delete_note",
                                     arguments=json.dumps({"q": secret}), server="feat", raw_tool="delete_note")),
        ItemRecord(item=ApprovalRecord(call_id="call_12345678", tool="mcp__feat__delete_note", server="feat",
                                       raw_tool="delete_note", decision="approve_session", by="remembered",
                                       arguments={secret: secret})),
        ItemRecord(item=FunctionCallOutput(call_id="call_12345678", output=f"out {secret}", status="completed",
                                           structured={"k": [secret]})),
        TurnRecord(turn_id="turn_abcdef12", status="completed", policy="full-auto", reason=secret),
    ]
    with RolloutWriter(path, secrets=[secret], create=True) as writer:
        for line in lines:
            writer.append(line)
    read, warnings = read_rollout(path)
    assert warnings == []
    assert len(read) == len(lines)
    for before, after in zip(lines, read, strict=True):
        expected = before.model_dump()
        got = after.model_dump()
        if isinstance(before, ItemRecord):
            expected, got = expected["item"], got["item"]
        for field in ("type", "status", "entry", "policy", "decision", "by", "id", "turn_id", "call_id",
                      "thread_id", "server", "tool", "raw_tool"):
            assert got.get(field) == expected.get(field), field
    assert read[0].name == f"named {REDACTED}"  # type: ignore[union-attr]
    assert read[2].item.text == f"say {REDACTED}"  # type: ignore[union-attr]
    assert json.loads(read[3].item.arguments) == {"q": REDACTED}  # type: ignore[union-attr]
    assert read[3].item.name == "mcp__feat__delete_note"  # type: ignore[union-attr]
    assert read[4].item.arguments == {REDACTED: REDACTED}  # type: ignore[union-attr]
    assert read[5].item.output == f"out {REDACTED}"  # type: ignore[union-attr]
    assert read[6].reason == REDACTED  # type: ignore[union-attr]


def test_short_secrets_do_not_cut_words_out_of_history(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    short = ["x", "ab", "user", "deploy", "approve"]
    with RolloutWriter(path, secrets=short, create=True) as writer:
        writer.append(ThreadMeta(thread_id="t"))
        writer.append(ItemRecord(item=UserMessage(text="deploy to production as user, approve it")))
    (_, message), warnings = read_rollout(path)
    assert warnings == []
    assert message.item.text == "deploy to production as user, approve it"  # type: ignore[union-attr]


@pytest.mark.parametrize("how", ["env", "flag", "generated"])
async def test_the_http_servers_own_token_never_reaches_history(tmp_path: Path, how: str) -> None:
    home = tmp_path / "home"
    token = "nbst-" + "Z" * 12 + "-token-value"
    env = cli_env(home)
    # The replay script must hold the token, known only once the server printed it: the caller
    # names the script, which a server allows only with --allow-config-override.
    args = [sys.executable, "-m", "nbagent.server", "--http", "127.0.0.1:0", "--allow-config-override"]
    if how == "env":
        env["NBAGENT_SERVER_TOKEN"] = token
    elif how == "flag":
        args += ["--token", token]
    process = subprocess.Popen(args, env=env, cwd=tmp_path, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 60
        url, printed = None, how != "generated"
        while url is None or not printed:
            assert time.monotonic() < deadline, "nbagent mcp-server did not start"
            line = process.stderr.readline()
            assert line or process.poll() is None, "nbagent mcp-server exited"
            if m := re.search(r"listening on (http://\S+)", line):
                url = m.group(1)
            if m := re.search(r"bearer token: (\S+)", line):
                token, printed = m.group(1), True
        script = tmp_path / "script.json"
        script.write_text(json.dumps({"responses": [{"text": f"your token is {token}, keep it safe"}]}))
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as hc:
            async with Client(streamable_http_client(url, http_client=hc), mode="legacy") as client:
                result = await client.call_tool(
                    "agent", {"prompt": f"I was given Authorization: Bearer {token}", "model": f"replay:{script}"})
                assert not result.is_error, result
                assert disk_bytes(home), "the thread was written"
                live = disk_bytes(home)
    finally:
        process.kill()  # no checkpoint on the way out: the WAL stays on disk to be checked too
        process.wait(20)
    data = live + disk_bytes(home)
    assert token.encode() not in data
    (row,) = ThreadStore(home).list_threads()
    assert row.last_prompt == f"I was given Authorization: Bearer {REDACTED}"


async def test_the_notebook_servers_token_never_reaches_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``%agent serve``: a caller's arguments are recorded with the approval they needed."""
    home = tmp_path / "home"
    monkeypatch.setenv("NBAGENT_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    async with Session(model=f"replay:{tmp_path / 'none.json'}", policy="on-request", interactive=True) as session:
        ran: list[str] = []
        session.register_tool(lambda text: ran.append(text) or f"posted {text}", name="post", destructive=True)

        def approve(event: Event) -> None:
            if event.msg.type == "approval_requested":
                session.submit(ApprovalDecision(call_id=event.msg.call_id, decision="approve"))  # type: ignore[union-attr]

        session.subscribe(approve)
        handle = await start_notebook_server(session)
        try:
            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {handle.token}"}) as hc:
                async with Client(streamable_http_client(handle.url, http_client=hc), mode="legacy") as client:
                    out = await client.call_tool("post", {"text": f"token={handle.token}"})
                    assert not out.is_error and ran == [f"token={handle.token}"]  # it ran with what was sent
                    assert out.content[0].text == f"posted token={REDACTED}"  # type: ignore[union-attr]  # shown as kept
            live = disk_bytes(home)
        finally:
            await handle.stop()
        token = handle.token
    data = live + disk_bytes(home)
    assert len(token) >= 32 and token.encode() not in data
    (approval,) = [i for i in ThreadStore(home).load(session._thread.id).items if isinstance(i, ApprovalRecord)]
    assert approval.arguments == {"text": f"token={REDACTED}"} and approval.decision == "approve"
