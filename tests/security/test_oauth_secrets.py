"""OAuth secrets: tokens live only in their 0600 store, never in a rollout, a log or an event;
the loopback callback completes only the login it was opened for; a stored token goes to no
other server; a hostile store or sign-in link changes nothing but asks the person again."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import stat
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.shared.auth import OAuthToken

from nbagent import Session
from nbagent.config import Config, McpServerConfig, ModelProviderConfig
from nbagent.mcp.connection import McpConnection
from nbagent.mcp.oauth.callback import LoopbackCallback
from nbagent.mcp.oauth.storage import FileBackend, OAuthRecord
from nbagent.notebook.login import LoginLinks
from nbagent.protocol import CallTool, Event, McpLoginCompleted, McpLoginRequired
from nbagent.secrets import redacted
from tests.mcp.conftest import Answers, _free_port, records, server_cfg
from tests.mcp.oauth_helpers import OAuthServer, Person, serve_oauth
from tests.security.store_env import disk_bytes


@pytest.fixture
def oauth_server(tmp_path: Path) -> Any:
    yield from serve_oauth(tmp_path)


def every_file(root: Path, *, skip: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and skip not in p.parents)


async def test_no_token_reaches_a_rollout_a_log_or_the_event_stream(
    oauth_server: OAuthServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("NBAGENT_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nbagent.toml").write_text('mcp_oauth_credentials_store = "file"\n')
    caplog.set_level(logging.DEBUG)
    call = {"tool_calls": [{"name": "mcp__remote__add", "arguments": {"a": 2, "b": 3}}]}
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [call, {"text": "first"}, call, {"text": "second"}]}))
    events: list[Event] = []
    async with Session(model=f"replay:{script}", policy="full-auto",
                       mcp_servers={"remote": McpServerConfig(url=oauth_server.url)}) as session:  # fmt: skip
        session.subscribe(events.append)
        person = Person(events)  # type: ignore[arg-type]
        first = await asyncio.wait_for(session.run("add"), 60)
        oauth_server.revoke_all()  # the next call meets a 401: a second login, new tokens
        second = await asyncio.wait_for(session.run("add again"), 60)
        person.stop()
        live = disk_bytes(home)
    assert first.ok and second.ok, (first.error, second.error)
    assert [type(e.msg) for e in events if isinstance(e.msg, (McpLoginRequired, McpLoginCompleted))] == [
        McpLoginRequired, McpLoginCompleted, McpLoginRequired, McpLoginCompleted,
    ]  # fmt: skip
    issued = oauth_server.state()["issued"]
    stored = (home / "oauth" / "remote.json").read_text()
    assert len(issued) == 4 and issued[-2] in stored  # the test looks for the real strings
    outside = live + disk_bytes(home) + every_file(home, skip=home / "oauth")
    stream = "\n".join(e.model_dump_json() for e in events)
    for token in issued:
        assert token.encode() not in outside, "a token reached a rollout, the index or a log file"
        assert token not in stream, "a token reached the event stream"
        assert token not in caplog.text, "a token reached the log"
    assert stat.S_IMODE((home / "oauth" / "remote.json").stat().st_mode) == 0o600


async def test_a_token_a_server_echoes_back_is_hidden_everywhere_and_kept_from_other_servers(
    oauth_server: OAuthServer, openai_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server puts the access token it was sent into its result: the rollout, the events a
    front end shows and the model's next request hold it redacted, and a call carrying it to
    another server does not run."""
    home = tmp_path / "home"
    monkeypatch.chdir(tmp_path)
    openai_server.script([{"tool_calls": [{"name": "mcp__remote__credentials", "arguments": {}}]}, {"text": "seen"}])
    config = Config(
        model="m", model_provider="local", approval_policy="full-auto", home=str(home), mcp_oauth_credentials_store="file",
        model_providers={"local": ModelProviderConfig(base_url=openai_server.base_url, wire_api="chat")},
        mcp_servers={"remote": McpServerConfig(url=oauth_server.url), "other": server_cfg("takes_any.py", tmp_path / "o.ndjson")},
    )  # fmt: skip
    events: list[Event] = []
    async with Session(config=config) as session:
        session.subscribe(events.append)
        person = Person(events)  # type: ignore[arg-type]
        result = await asyncio.wait_for(session.run("who am I"), 60)
        person.stop()
        [token] = oauth_server.state()["issued"][:1]
        shown = "\n".join(redacted(e, session._thread.redactor()).model_dump_json() for e in events)
        sent = await session.perform(CallTool(name="mcp__other__take", arguments={"value": f"use {token}"}))
        thread_id = session._thread.id
    assert result.ok, result.error
    (told,) = [m["content"] for m in openai_server.requests[1]["messages"] if m.get("role") == "tool"]
    assert "you signed in with [redacted]" in told  # the server's answer, its token cut
    rollout = (home / "threads" / f"{thread_id}.jsonl").read_text()
    for where in (rollout, shown, json.dumps(openai_server.requests)):
        assert token not in where
    assert "keeps from this server (MCP server 'remote''s OAuth access token)" in sent.output
    assert records(tmp_path / "o.ndjson") == []  # the other server got nothing


def test_the_store_is_0600_in_a_0700_directory_whatever_the_umask_or_the_directory_was(tmp_path: Path) -> None:
    directory = tmp_path / "oauth"
    directory.mkdir(mode=0o777)
    os.chmod(directory, 0o777)  # left world-writable by someone else
    old = os.umask(0)
    try:
        FileBackend(directory, "remote").write('{"url": "u"}')
        FileBackend(tmp_path / "fresh" / "oauth", "remote").write('{"url": "u"}')
    finally:
        os.umask(old)
    for where in (directory, tmp_path / "fresh" / "oauth"):
        assert stat.S_IMODE(where.stat().st_mode) == 0o700
        assert stat.S_IMODE((where / "remote.json").stat().st_mode) == 0o600
    assert [p.name for p in directory.iterdir()] == ["remote.json"]  # no temp file left behind


async def test_the_callback_completes_only_the_login_it_was_opened_for() -> None:
    port = _free_port()
    callback = LoopbackCallback(port, "remote")
    await callback.expect(f"https://as.example/authorize?state=RIGHT&client_id=x&redirect_uri={callback.redirect_uri}")
    base = f"http://127.0.0.1:{port}"
    hostile = [
        ("GET", "/callback?code=stolen&state=WRONG"),  # another login's state
        ("GET", "/callback?code=stolen"),  # none
        ("GET", "/callback?code=stolen&state="),  # empty
        ("GET", "/other?code=stolen&state=RIGHT"),  # another path
        ("POST", "/callback?code=stolen&state=RIGHT"),  # another method
        ("GET", "/callback?state=RIGHT"),  # no code
    ]
    async with httpx.AsyncClient(timeout=10) as probe:
        for method, path in hostile:
            answer = await probe.request(method, base + path)
            assert answer.status_code in (400, 404), (method, path, answer.status_code)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)  # not HTTP at all
        writer.write(b"\x00\xff garbage\r\n\r\n")
        await writer.drain()
        assert b"404" in await reader.read()
        writer.close()
        ok = await probe.get(base + "/callback?code=real&state=RIGHT&iss=https://as.example")
        assert ok.status_code == 200
    result = await asyncio.wait_for(callback.wait(), 5)
    assert (result.code, result.state) == ("real", "RIGHT")


async def test_a_refused_sign_in_fails_the_server_with_the_reason() -> None:
    port = _free_port()
    callback = LoopbackCallback(port, "remote")
    await callback.expect("https://as.example/authorize?state=S")
    async with httpx.AsyncClient(timeout=10) as probe:
        page = await probe.get(f"http://127.0.0.1:{port}/callback?state=S&error=access_denied&error_description=%3Cscript%3E")
    assert "<script>" not in page.text and "&lt;script&gt;" in page.text
    with pytest.raises(Exception, match="sign-in refused: <script>"):
        await asyncio.wait_for(callback.wait(), 5)


async def connect(tmp_path: Path, url: str, events: list[Any]) -> McpConnection:
    conn = McpConnection("remote", McpServerConfig(url=url), log_dir=tmp_path / "logs", on_event=events.append,
                         on_elicit=Answers(), config=Config(home=str(tmp_path / "home"), mcp_oauth_credentials_store="file"))  # fmt: skip
    await conn.start()
    return conn


async def test_tokens_kept_for_one_server_are_never_sent_to_another(oauth_server: OAuthServer, tmp_path: Path) -> None:
    events: list[Any] = []
    person = Person(events)
    first = await connect(tmp_path, oauth_server.url, events)
    await first.aclose()
    for other in serve_oauth(tmp_path):  # the same name, now pointing at another server
        second = await connect(tmp_path, other.url, events)
        await second.aclose()
        presented = [e.get("token") for e in other.state()["events"] if e["kind"] == "rejected_token"]
        assert not set(presented) & set(oauth_server.state()["issued"])
        assert "register" in other.kinds()  # nor its registration: a new client there
    person.stop()
    assert len([e for e in events if isinstance(e, McpLoginRequired)]) == 2


@pytest.mark.parametrize("content", [b"\x00\xffnot json", b'{"url": 5}', b'["a list"]', b'{"url": "x", "tokens": "no"}'])
async def test_a_corrupt_store_asks_the_person_again(oauth_server: OAuthServer, tmp_path: Path, content: bytes) -> None:
    stored = tmp_path / "home" / "oauth" / "remote.json"
    stored.parent.mkdir(parents=True, mode=0o700)
    stored.write_bytes(content)
    events: list[Any] = []
    person = Person(events)
    conn = await connect(tmp_path, oauth_server.url, events)
    person.stop()
    result, _ = await conn.call_tool("add", {"a": 1, "b": 1})
    await conn.aclose()
    assert not result.is_error
    assert [type(e) for e in events if isinstance(e, (McpLoginRequired, McpLoginCompleted))] == [
        McpLoginRequired, McpLoginCompleted,
    ]  # fmt: skip
    assert json.loads(stored.read_text())["url"] == oauth_server.url


@pytest.mark.parametrize("url", ["javascript:alert(document.cookie)", "data:text/html,<script>x</script>",
                                 "https://as.example/\u202eauthorize", "https:///no-host", 'https://a.example/"onmouseover="x'])  # fmt: skip
def test_a_hostile_sign_in_link_is_never_a_live_link(url: str) -> None:
    links = LoginLinks()
    links.handle(McpLoginRequired(server="<b>srv</b>", url=url))
    shown = links.lines["<b>srv</b>"].value
    assert "<script>" not in shown and "<b>srv</b>" not in shown
    if url.startswith("https://a.example/"):
        assert 'href="https://a.example/&quot;onmouseover=&quot;x"' in shown  # quoted, so no attribute escapes
    else:
        assert "href=" not in shown


async def test_a_stored_token_of_a_server_not_started_is_a_secret_from_the_session_start(tmp_path: Path) -> None:
    """A disabled HTTP server's token sits in the store on disk; a tool may read it there. It is
    a secret from the session's start: a call carrying it to another server does not run, and
    the rollout hides it. (No store is read per turn: each is read once, as the session starts.)"""
    home, url = tmp_path / "home", "http://127.0.0.1:9/mcp"
    token = f"stored-access-{secrets.token_hex(8)}"
    record = OAuthRecord(url=url, tokens=OAuthToken(access_token=token, token_type="Bearer"))
    FileBackend(home / "oauth", "parked").write(record.model_dump_json())  # as an earlier session left it
    config = Config(
        home=str(home), mcp_oauth_credentials_store="file", approval_policy="full-auto",
        mcp_servers={"parked": McpServerConfig(url=url, enabled=False), "other": server_cfg("takes_any.py", tmp_path / "o.ndjson")},
    )  # fmt: skip
    async with Session(config=config) as session:
        await session._servers.ready()
        sent = await session.perform(CallTool(name="mcp__other__take", arguments={"value": f"use {token}"}))
        hidden = session._thread.redactor().text(f"read {token}")
    assert "keeps from this server (MCP server 'parked''s OAuth access token)" in sent.output, sent.output
    assert records(tmp_path / "o.ndjson") == []
    assert token not in hidden
