"""Where an HTTP server's OAuth tokens and client registration are kept between sessions.

One record per server name, bound to the server's URL: a server whose ``url`` changed gets no
tokens meant for another resource. Files are written whole (temp file, then rename) with mode
0600 in a 0700 directory, so a crash leaves the old record and no one else can read either;
the OS keyring takes the same record when ``mcp_oauth_credentials_store`` asks for it.

A token read or issued here is a secret of the process from then on (``add_process_secret``):
rollouts and views redact it wherever a server echoes it, and only its own server is sent it.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Protocol

from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import BaseModel, ValidationError

from nbagent.config import Config, ConfigError
from nbagent.mcp.wire import owner_of
from nbagent.secrets import add_process_secret

KEYRING_SERVICE = "nbagent-mcp-oauth"


class OAuthRecord(BaseModel):
    url: str
    tokens: OAuthToken | None = None
    expires_at: float | None = None
    """When ``tokens`` expire (Unix time): a restarted session refreshes an expired token
    instead of presenting it and being sent through a new login."""
    client_info: OAuthClientInformationFull | None = None


class Backend(Protocol):
    def read(self) -> str | None: ...
    def write(self, text: str) -> None: ...
    def delete(self) -> bool: ...


class FileBackend:
    """``$NBAGENT_HOME/oauth/NAME.json``, mode 0600, in a directory only its owner can enter."""

    def __init__(self, directory: Path, name: str) -> None:
        self.directory = directory
        self.path = directory / f"{name}.json"

    def read(self) -> str | None:
        """The record's text; a file that cannot be read as text counts as none (a new login)."""
        try:
            return self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def write(self, text: str) -> None:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        if stat.S_IMODE(self.directory.stat().st_mode) & 0o077:
            os.chmod(self.directory, 0o700)  # an existing directory others could enter
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with suppress(OSError):
                tmp.unlink()
            raise

    def delete(self) -> bool:
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True


class KeyringBackend:
    """The OS keyring (the ``keyring`` package): one entry per server name and URL, so two
    homes' servers of the same name (or a server that moved) never share an entry."""

    def __init__(self, name: str, url: str) -> None:
        import keyring

        self._keyring = keyring
        self.name = f"{name}|{hashlib.sha256(url.encode()).hexdigest()[:16]}"

    def read(self) -> str | None:
        return self._keyring.get_password(KEYRING_SERVICE, self.name)

    def write(self, text: str) -> None:
        self._keyring.set_password(KEYRING_SERVICE, self.name, text)

    def delete(self) -> bool:
        from keyring.errors import PasswordDeleteError

        try:
            self._keyring.delete_password(KEYRING_SERVICE, self.name)
        except PasswordDeleteError:
            return False
        return True


def _keyring_usable() -> bool:
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return False
    return not isinstance(keyring.get_keyring(), fail.Keyring)


def backend_for(name: str, url: str, config: Config) -> Backend:
    """The store ``mcp_oauth_credentials_store`` names: ``auto`` is the keyring when one works."""
    wanted = config.mcp_oauth_credentials_store
    if wanted == "keyring" and not _keyring_usable():
        raise ConfigError(
            "mcp_oauth_credentials_store = 'keyring': no usable OS keyring (install the 'keyring' package "
            "and a backend, or set it to 'file')"
        )
    if wanted == "keyring" or (wanted == "auto" and _keyring_usable()):
        return KeyringBackend(name, url)
    return FileBackend(config.home_path / "oauth", name)


def hold_stored(servers: list[tuple[str, str]], config: Config) -> None:
    """Read each ``(name, url)`` server's stored record once, so its tokens are secrets of this
    process from the session's start, whether or not that server ever starts here (a disabled
    one's token a tool reads off the disk is still redacted, and kept from other servers). A
    store that cannot be read holds nothing to hide."""
    for name, url in servers:
        with suppress(Exception):  # a keyring that cannot be read, a broken record: nothing held
            TokenStore(backend_for(name, url, config), name, url)


class TokenStore:
    """The SDK's ``TokenStorage`` for one server, over a backend; a record that cannot be read
    (corrupt, or for another URL) counts as none, so the person is asked to log in again.

    ``fresh`` hides stored tokens (a login asked for by name starts over; they are replaced
    only when it succeeds). ``preregistered`` is a client named in the config: it takes the
    place of any stored registration and is never written."""

    def __init__(self, backend: Backend, name: str, url: str, *, fresh: bool = False) -> None:
        self.backend = backend
        self.name = name
        self.url = url
        self.preregistered: OAuthClientInformationFull | None = None
        self.on_tokens: Callable[[], None] | None = None
        self._record = self._load()
        self._hide_tokens = fresh

    def _load(self) -> OAuthRecord:
        text = self.backend.read()
        if text:
            with suppress(ValidationError, ValueError):
                record = OAuthRecord.model_validate_json(text)
                if record.url == self.url:
                    return self._held(record)
        return OAuthRecord(url=self.url)

    def _save(self, **update: object) -> None:
        self._record = self._held(self._record.model_copy(update=update))
        self.backend.write(self._record.model_dump_json(exclude_none=True))

    def _held(self, record: OAuthRecord) -> OAuthRecord:
        """``record``, its tokens and client secret now secrets of the process that this server owns."""
        tokens, client = record.tokens, record.client_info
        where, owner = f"MCP server {self.name!r}'s OAuth", owner_of(self.name, self.url)
        for what, value in (
            ("access token", tokens.access_token if tokens else None),
            ("refresh token", tokens.refresh_token if tokens else None),
            ("client secret", client.client_secret if client else None),
        ):
            if value:
                add_process_secret(value, f"{where} {what}", owner)
        return record

    @property
    def expires_at(self) -> float | None:
        return self._record.expires_at

    @property
    def client_info(self) -> OAuthClientInformationFull | None:
        return self.preregistered or self._record.client_info

    async def get_tokens(self) -> OAuthToken | None:
        return None if self._hide_tokens else self._record.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires = time.time() + float(tokens.expires_in) if tokens.expires_in is not None else None
        self._hide_tokens = False
        self._save(tokens=tokens, expires_at=expires)
        if self.on_tokens is not None:
            self.on_tokens()

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.preregistered is None:
            self._save(client_info=client_info)

    def forget_client(self) -> None:
        """Drop a registration made for another redirect URI, and the tokens issued to it."""
        self._save(client_info=None, tokens=None, expires_at=None)
