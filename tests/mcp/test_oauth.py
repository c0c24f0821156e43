"""OAuth 2.1 against a real protected MCP server that is its own authorization server: the first
connection discovers, registers, logs in with PKCE through a link a person follows, and calls a
tool; tokens are kept, refreshed when they expire, and a revoked token means a new login."""

from __future__ import annotations

import asyncio
import json
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from nbagent.config import Config, McpServerConfig
from nbagent.config.oauth import OAuthSettings
from nbagent.mcp.connection import McpConnection
from nbagent.mcp.errors import McpStartupError
from nbagent.mcp.oauth import login, logout
from nbagent.protocol import McpLoginCompleted, McpLoginRequired
from tests.mcp.conftest import Answers, _free_port
from tests.mcp.oauth_helpers import OAuthServer, Person, follow, serve_oauth
from tests.trusting import clean_environ
from tests.waiting import until


@pytest.fixture
def oauth_server(tmp_path: Path) -> Iterator[OAuthServer]:
    yield from serve_oauth(tmp_path)


@pytest.fixture
def short_lived(tmp_path: Path) -> Iterator[OAuthServer]:
    """Access tokens that expire two seconds after they are issued."""
    yield from serve_oauth(tmp_path, ACCESS_TTL="2")


class Client:
    """Connections to one server, as sessions would open them, sharing a home and an event list."""

    def __init__(self, tmp: Path, server: McpServerConfig, **config: Any) -> None:
        self.config = Config(home=str(tmp / "home"), **{"mcp_oauth_credentials_store": "file", **config})
        self.server = server
        self.tmp = tmp
        self.events: list[Any] = []
        self.conns: list[McpConnection] = []

    async def connect(self) -> McpConnection:
        conn = McpConnection(
            "remote", self.server, log_dir=self.tmp / "logs", on_event=self.events.append, on_elicit=Answers(),
            config=self.config,
        )  # fmt: skip
        self.conns.append(conn)
        await conn.start()
        return conn

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def stored(self) -> Path:
        return Path(self.config.home_path) / "oauth" / "remote.json"

    async def aclose(self) -> None:
        for conn in self.conns:
            await conn.aclose()


@pytest.fixture
async def clients(tmp_path: Path) -> Any:
    made: list[Client] = []

    def make(server: McpServerConfig, **config: Any) -> Client:
        made.append(Client(tmp_path, server, **config))
        return made[-1]

    yield make
    for client in made:
        await client.aclose()


async def add(conn: McpConnection) -> int:
    result, _ = await conn.call_tool("add", {"a": 2, "b": 3})
    assert not result.is_error, result
    return int(result.structured_content["result"]) if result.structured_content else int(result.content[0].text)  # type: ignore[union-attr]


async def test_first_connection_logs_in_through_the_link_and_calls_the_tool(oauth_server: OAuthServer, clients) -> None:
    client = clients(McpServerConfig(url=oauth_server.url))
    person = Person(client.events)
    conn = await client.connect()
    person.stop()
    assert await add(conn) == 5
    (asked,) = client.of(McpLoginRequired)
    assert asked.server == "remote"
    link = urlsplit(asked.url)
    query = parse_qs(link.query)
    assert f"{link.scheme}://{link.netloc}{link.path}" == f"{oauth_server.base}/authorize"
    assert query["code_challenge_method"] == ["S256"] and len(query["code_challenge"][0]) >= 43
    assert query["redirect_uri"][0].startswith("http://127.0.0.1:")
    assert query["resource"] == [oauth_server.url]
    assert [e.server for e in client.of(McpLoginCompleted)] == ["remote"]
    assert client.events.index(asked) < client.events.index(client.of(McpLoginCompleted)[0])
    state = oauth_server.state()
    kinds = [e["kind"] for e in state["events"] if e["kind"] != "rejected_token"]
    assert kinds == ["register", "authorize", "code_exchange"]  # discovery found the AS, then DCR, PKCE
    authorize = state["events"][[e["kind"] for e in state["events"]].index("authorize")]
    assert authorize["code_challenge"] == query["code_challenge"][0]
    assert "Signed in to remote" in person.landed[0].text
    # Kept for the next session: mode 0600 in a directory only its owner can enter.
    assert stat.S_IMODE(client.stored.stat().st_mode) == 0o600
    assert stat.S_IMODE(client.stored.parent.stat().st_mode) == 0o700


async def test_a_later_session_uses_the_stored_tokens_without_asking(oauth_server: OAuthServer, clients) -> None:
    first = clients(McpServerConfig(url=oauth_server.url))
    person = Person(first.events)
    await first.connect()
    person.stop()
    await first.aclose()
    second = clients(McpServerConfig(url=oauth_server.url))
    conn = await second.connect()
    assert await add(conn) == 5
    assert second.of(McpLoginRequired) == []
    assert oauth_server.kinds().count("authorize") == 1


async def test_an_expired_token_is_refreshed_not_asked_for_again(short_lived: OAuthServer, clients) -> None:
    client = clients(McpServerConfig(url=short_lived.url))
    person = Person(client.events)
    conn = await client.connect()
    expires = json.loads(client.stored.read_text())["expires_at"]
    await until(lambda: time.time() > expires + 0.5, "the access token to expire")
    assert await add(conn) == 5  # the same session refreshes before sending
    await client.aclose()
    await until(lambda: time.time() > json.loads(client.stored.read_text())["expires_at"] + 0.5, "expiry again")
    later = clients(McpServerConfig(url=short_lived.url))
    assert await add(await later.connect()) == 5  # a restarted one knows the stored token expired
    person.stop()
    kinds = short_lived.kinds()
    assert kinds.count("refresh") == 2 and kinds.count("authorize") == 1
    assert "rejected_token" not in kinds
    assert len(client.of(McpLoginRequired)) == 1 and later.of(McpLoginRequired) == []


async def test_a_revoked_token_mid_session_asks_to_log_in_again_and_the_call_completes(
    oauth_server: OAuthServer, clients
) -> None:
    client = clients(McpServerConfig(url=oauth_server.url))
    person = Person(client.events)
    conn = await client.connect()
    oauth_server.revoke_all()
    assert await add(conn) == 5  # 401 -> a new login -> the same call retried
    person.stop()
    assert conn.state == "ready"
    assert len(client.of(McpLoginRequired)) == 2 and len(client.of(McpLoginCompleted)) == 2
    kinds = oauth_server.kinds()
    assert kinds.count("authorize") == 2 and "rejected_token" in kinds


async def test_waiting_for_the_person_does_not_count_against_the_startup_timeout(
    oauth_server: OAuthServer, clients
) -> None:
    client = clients(McpServerConfig(url=oauth_server.url, startup_timeout_sec=2))
    asked_at: list[float] = []

    def slow() -> bool:  # the person takes longer than the whole startup timeout to consent
        if not asked_at:
            asked_at.append(time.monotonic())
        return time.monotonic() > asked_at[0] + 3

    person = Person(client.events, ready=slow)
    conn = await client.connect()
    person.stop()
    assert await add(conn) == 5


async def test_configured_scopes_and_resource_are_what_the_link_asks_for(oauth_server: OAuthServer, clients) -> None:
    resource = f"{oauth_server.url}/workspace-a"
    client = clients(McpServerConfig(url=oauth_server.url, scopes=["mcp:read", "mcp:write"], oauth_resource=resource))
    person = Person(client.events)
    await client.connect()
    person.stop()
    query = parse_qs(urlsplit(client.of(McpLoginRequired)[0].url).query)
    assert query["scope"] == ["mcp:read mcp:write"] and query["resource"] == [resource]
    (authorize,) = [e for e in oauth_server.state()["events"] if e["kind"] == "authorize"]
    assert authorize["scopes"] == ["mcp:read", "mcp:write"] and authorize["resource"] == resource


async def test_a_preregistered_client_skips_registration(tmp_path: Path, clients, monkeypatch) -> None:
    port = _free_port()
    monkeypatch.setenv("NBAGENT_TEST_OAUTH_SECRET", "s3cr3t-value")
    env = {"PRE_CLIENT_ID": "nbagent-app", "PRE_CLIENT_SECRET": "s3cr3t-value",
           "PRE_REDIRECT_URI": f"http://127.0.0.1:{port}/callback"}  # fmt: skip
    for server in serve_oauth(tmp_path, **env):
        oauth = OAuthSettings(client_id="nbagent-app", client_secret_env_var="NBAGENT_TEST_OAUTH_SECRET")
        client = clients(McpServerConfig(url=server.url, oauth=oauth), mcp_oauth_callback_port=port)
        person = Person(client.events)
        conn = await client.connect()
        person.stop()
        assert await add(conn) == 5
        assert "register" not in server.kinds()
        assert parse_qs(urlsplit(client.of(McpLoginRequired)[0].url).query)["client_id"] == ["nbagent-app"]
        assert "s3cr3t-value" not in client.stored.read_text()  # the secret stays in the environment


async def test_login_and_logout_as_the_mcp_verbs_call_them(oauth_server: OAuthServer, tmp_path: Path) -> None:
    config = Config(home=str(tmp_path / "home"), mcp_oauth_credentials_store="file")
    server = McpServerConfig(url=oauth_server.url)
    shown: list[str] = []

    async def on_link(url: str) -> None:
        shown.append(url)
        asyncio.get_running_loop().create_task(follow(url))  # the person, while login waits

    await login("remote", server, config, on_link=on_link)
    stored = tmp_path / "home" / "oauth" / "remote.json"
    assert len(shown) == 1 and stored.exists()
    await login("remote", server, config, on_link=on_link)  # asked by name: a new login, tokens or not
    assert len(shown) == 2 and oauth_server.kinds().count("register") == 1
    assert logout("remote", server, config) is True
    assert not stored.exists()
    assert logout("remote", server, config) is False


@pytest.fixture
def memory_keyring() -> Iterator[Any]:
    """A real ``keyring`` backend that keeps entries in memory (the OS one is not a test's to touch)."""
    keyring = pytest.importorskip("keyring")
    from keyring.backend import KeyringBackend
    from keyring.errors import PasswordDeleteError

    class Memory(KeyringBackend):
        priority = 1  # type: ignore[assignment]

        def __init__(self) -> None:
            super().__init__()
            self.entries: dict[tuple[str, str], str] = {}

        def get_password(self, service: str, username: str) -> str | None:
            return self.entries.get((service, username))

        def set_password(self, service: str, username: str, password: str) -> None:
            self.entries[(service, username)] = password

        def delete_password(self, service: str, username: str) -> None:
            if self.entries.pop((service, username), None) is None:
                raise PasswordDeleteError(username)

    before = keyring.get_keyring()
    keyring.set_keyring(memory := Memory())
    yield memory
    keyring.set_keyring(before)


async def test_the_keyring_keeps_the_tokens_when_the_config_asks(oauth_server: OAuthServer, clients, memory_keyring) -> None:
    server = McpServerConfig(url=oauth_server.url)
    client = clients(server, mcp_oauth_credentials_store="keyring")
    person = Person(client.events)
    await client.connect()
    person.stop()
    ((service, _account), text), = memory_keyring.entries.items()
    assert service == "nbagent-mcp-oauth" and json.loads(text)["tokens"]["access_token"]
    assert not client.stored.parent.exists()  # nothing on disk
    later = clients(server, mcp_oauth_credentials_store="keyring")
    assert await add(await later.connect()) == 5 and later.of(McpLoginRequired) == []
    assert logout("remote", server, later.config) is True and memory_keyring.entries == {}


async def test_asking_for_a_keyring_that_does_not_work_fails_the_server_clearly(clients) -> None:
    keyring = pytest.importorskip("keyring")
    from keyring.backends import fail

    before = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    try:
        client = clients(McpServerConfig(url="http://127.0.0.1:9/mcp"), mcp_oauth_credentials_store="keyring")
        with pytest.raises(McpStartupError, match="mcp_oauth_credentials_store = 'keyring': no usable OS keyring"):
            await client.connect()
    finally:
        keyring.set_keyring(before)


async def test_a_401_from_a_server_without_oauth_fails_it_in_one_line(http_server, clients) -> None:
    client = clients(McpServerConfig(url=http_server.url, startup_timeout_sec=20))
    with pytest.raises(McpStartupError) as failed:
        await client.connect()
    message = str(failed.value)
    assert message.startswith("MCP server 'remote' failed to start:") and "\n" not in message, message
    assert client.of(McpLoginRequired) == []  # nothing to sign in to: no link is shown


def project_with(folder: Path, server: OAuthServer) -> None:
    """An ``nbagent.toml`` naming the OAuth server as ``remote``, tokens kept in files."""
    (folder / "nbagent.toml").write_text(
        f'mcp_oauth_credentials_store = "file"\n[mcp_servers.remote]\nurl = "{server.url}"\n'
    )


async def test_the_cli_prints_the_link_and_the_run_completes_once_it_is_followed(
    oauth_server: OAuthServer, tmp_path: Path
) -> None:
    from tests.cli.proc import ROOT

    project_with(tmp_path, oauth_server)
    script = tmp_path / "script.json"
    call = {"tool_calls": [{"name": "mcp__remote__add", "arguments": {"a": 2, "b": 3}}]}
    script.write_text(json.dumps({"responses": [call, {"text": "added"}]}))
    env = clean_environ()
    env["NBAGENT_HOME"] = str(tmp_path / "home")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "nbagent.cli", "-C", str(tmp_path), "run", "-m", f"replay:{script}",
        "--policy", "full-auto", "add", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=env, cwd=ROOT,
    )  # fmt: skip
    assert proc.stdout is not None
    lines: list[str] = []
    async with asyncio.timeout(60):
        while not (lines and lines[-1].strip().startswith(f"{oauth_server.base}/authorize?")):
            line = (await proc.stdout.readline()).decode()
            assert line, f"no sign-in link printed: {lines}"
            lines.append(line)
        await follow(lines[-1].strip())
        rest, err = await proc.communicate()
    out = "".join(lines) + rest.decode()
    assert proc.returncode == 0, (out, err.decode())
    assert "[mcp remote: sign in by opening this link in your browser:" in out
    assert "[mcp remote: signed in]" in out and "<- mcp__remote__add" in out and "added" in out


async def test_a_command_no_one_watches_uses_stored_tokens_and_never_waits_for_a_sign_in(
    oauth_server: OAuthServer, tmp_path: Path
) -> None:
    from tests.cli.proc import nbagent

    project_with(tmp_path, oauth_server)
    home = tmp_path / "home"
    before = await asyncio.to_thread(nbagent, "-C", str(tmp_path), "tools", "--json", home=home)
    assert "needs you to sign in: run `nbagent mcp login remote`" in before.stdout + before.stderr
    assert "authorize" not in oauth_server.kinds()  # no login was started for no one

    async def person(url: str) -> None:
        asyncio.get_running_loop().create_task(follow(url))

    config = Config(home=str(home), mcp_oauth_credentials_store="file")
    await login("remote", McpServerConfig(url=oauth_server.url), config, on_link=person)
    after = await asyncio.to_thread(nbagent, "-C", str(tmp_path), "tools", "--json", home=home)
    assert after.returncode == 0, after.stderr
    assert "mcp__remote__add" in after.stdout
