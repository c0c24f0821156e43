"""OAuth for one HTTP server: the SDK's ``OAuthClientProvider`` with nbagent's storage,
loopback callback, configured scopes and resource, and events that show the person the link.

The SDK does discovery, registration, PKCE, the code exchange, refresh and re-authorisation on a
401; this module only supplies what it asks for. The link is handed to ``on_link`` (front ends
show it; nothing opens it), and the wait for the person is bounded and paused out of the
server's startup and tool deadlines by ``waiting``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass, fields
from typing import Any
from urllib.parse import urlsplit

import httpx2
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.oauth2 import OAuthContext
from mcp.client.auth.utils import extract_scope_from_www_auth, union_scopes
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata
from mcp.shared.auth_utils import check_resource_allowed
from pydantic import AnyUrl, PrivateAttr

from nbagent._version import __version__
from nbagent.config import Config, ConfigError, McpServerConfig
from nbagent.mcp.oauth.callback import HOST, LoopbackCallback, free_port, redirect_uri
from nbagent.mcp.oauth.compat import fit_token_auth
from nbagent.mcp.oauth.storage import TokenStore, backend_for
from nbagent.textsafe import is_loopback

LinkFn = Callable[[str], Awaitable[None]]
WaitingFn = Callable[[], AbstractContextManager[None]]

logging.getLogger("mcp.client.auth").addHandler(logging.NullHandler())
"""The SDK logs a failed flow with its traceback; nbagent reports the failure itself, in one line
naming the server. With a handler here, Python's last-resort handler no longer prints that
traceback into a notebook cell; handlers a person configures still receive the record."""


@dataclass
class _Context(OAuthContext):
    """The SDK's context, asking for the configured ``oauth_resource`` when there is one."""

    resource: str | None = None

    def get_resource_url(self) -> str:
        return self.resource or super().get_resource_url()

    def should_include_resource_param(self, protocol_version: str | None = None) -> bool:
        return self.resource is not None or super().should_include_resource_param(protocol_version)

    def prepare_token_auth(
        self, data: dict[str, str], headers: dict[str, str] | None = None
    ) -> tuple[dict[str, str], dict[str, str]]:
        fit_token_auth(self)  # a method the authorization server lists (compat.py)
        return super().prepare_token_auth(data, headers)


class _Metadata(OAuthClientMetadata):
    """Client metadata whose scope is the configured ``scopes`` (plus any a 401/403 challenge
    adds) whatever the SDK selects from the server's metadata, for registration and login alike."""

    _scopes: str | None = PrivateAttr(default=None)
    _challenged: str | None = PrivateAttr(default=None)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "scope" and self._scopes:
            value = union_scopes(self._scopes, self._challenged)
        super().__setattr__(name, value)


class _Provider(OAuthClientProvider):
    """The SDK provider, with the configured resource and scopes, and a stored token's expiry
    known after a restart, so an expired one is refreshed rather than replayed."""

    def __init__(self, *args: Any, resource: str | None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.context = _Context(**{f.name: getattr(self.context, f.name) for f in fields(self.context)}, resource=resource)

    async def _initialize(self) -> None:
        await super()._initialize()
        storage = self.context.storage
        if isinstance(storage, TokenStore) and self.context.current_tokens is not None:
            self.context.token_expiry_time = storage.expires_at

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super()._auth_flow(request)
        response: httpx2.Response | None = None
        try:
            while True:
                outgoing = await flow.asend(response)  # type: ignore[arg-type]  # a generator's first send is None
                response = yield outgoing
                metadata = self.context.client_metadata
                if response.status_code in (401, 403) and isinstance(metadata, _Metadata):
                    metadata._challenged = extract_scope_from_www_auth(response)
        except StopAsyncIteration:
            return
        finally:  # a request that failed (unreachable server) closes this flow: the SDK's holds its
            await flow.aclose()  # lock, which only this task may release, not the collector later


def _preregistered(name: str, server: McpServerConfig, config: Config, redirect: str) -> OAuthClientInformationFull | None:
    """The client named in ``[mcp_servers.NAME.oauth]``, its secret read from the environment."""
    oauth = server.oauth
    if oauth is None or oauth.client_id is None:
        return None
    secret = None
    if oauth.client_secret_env_var:
        secret = os.environ.get(oauth.client_secret_env_var)
        if not secret:
            raise ConfigError(
                f"MCP server {name!r}: oauth.client_secret_env_var {oauth.client_secret_env_var} is not set"
            )
    method = oauth.token_endpoint_auth_method or ("client_secret_post" if secret else "none")
    return OAuthClientInformationFull(
        client_id=oauth.client_id, client_secret=secret, token_endpoint_auth_method=method,
        redirect_uris=[AnyUrl(redirect)], grant_types=["authorization_code", "refresh_token"], response_types=["code"],
    )  # fmt: skip


def _registered_port(store: TokenStore) -> int | None:
    """The loopback port a stored registration named, so the same redirect URI is used again."""
    info = store.client_info
    for uri in (info.redirect_uris or []) if info else []:
        parts = urlsplit(str(uri))
        if parts.hostname == HOST and parts.port:
            return parts.port
    return None


class ServerAuth:
    """OAuth for one server connection: ``provider`` is the ``httpx2.Auth`` its HTTP client uses."""

    def __init__(
        self,
        name: str,
        server: McpServerConfig,
        config: Config,
        *,
        on_link: LinkFn | None,
        on_completed: Callable[[], None] | None = None,
        waiting: WaitingFn | None = None,
        fresh: bool = False,
    ) -> None:
        assert server.url is not None
        self.name = name
        self.store = TokenStore(backend_for(name, server.url, config), name, server.url, fresh=fresh)
        registered = _registered_port(self.store)
        port = config.mcp_oauth_callback_port or registered or free_port()
        if registered is not None and registered != port:
            self.store.forget_client()  # registered for another redirect URI: register again
        self.callback = LoopbackCallback(port, name)
        self.store.preregistered = _preregistered(name, server, config, redirect_uri(port))
        oauth = server.oauth
        self._on_link = on_link
        self._on_completed = on_completed
        self._waiting = waiting or nullcontext
        self._paused = ExitStack()
        self._login_timeout = config.elicitation_timeout_sec
        self._pending = False
        self.store.on_tokens = self._tokens_saved
        metadata = _Metadata(
            redirect_uris=[AnyUrl(self.callback.redirect_uri)],
            client_name="nbagent",
            software_id="nbagent",
            software_version=__version__,
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method=oauth.token_endpoint_auth_method if oauth else None,
            scope=" ".join(server.scopes) if server.scopes else None,
        )
        metadata._scopes = metadata.scope
        self.provider = _Provider(
            server.url,
            metadata,
            self.store,
            redirect_handler=self._redirect,
            callback_handler=self._callback,
            client_metadata_url=oauth.client_metadata_url if oauth else None,
            validate_resource_url=self._validate_resource if server.oauth_resource else None,
            resource=server.oauth_resource,
        )
        self._resource = server.oauth_resource

    async def _validate_resource(self, server_url: str, prm_resource: str | None) -> None:
        """With ``oauth_resource`` set, the protected resource must be that one (RFC 8707)."""
        assert self._resource is not None
        if prm_resource and not check_resource_allowed(requested_resource=self._resource, configured_resource=prm_resource):
            raise OAuthFlowError(
                f"MCP server {self.name!r}: protected resource {prm_resource} does not match oauth_resource {self._resource}"
            )

    def _check_endpoints(self, authorization_url: str) -> None:
        """OAuth 2.1 §1.5: an authorization server off this machine is reached over https only.
        Over plain http the link, the code and the PKCE verifier could be read on the way."""
        metadata = self.provider.context.oauth_metadata
        token = str(metadata.token_endpoint) if metadata is not None else None
        for what, url in (("authorization", authorization_url), ("token", token)):
            parts = urlsplit(url or "")
            if url and parts.scheme != "https" and not (parts.scheme == "http" and is_loopback(parts.hostname or "")):
                shown = parts._replace(query="", fragment="").geturl()
                raise OAuthFlowError(f"MCP server {self.name!r}: refusing to sign in: its {what} endpoint {shown} "
                                     "is not https, which OAuth 2.1 requires off this machine")

    async def _redirect(self, url: str) -> None:
        self._check_endpoints(url)
        if self._on_link is None:  # no one to show a link to (a command that only lists)
            raise OAuthFlowError(f"MCP server {self.name!r} needs you to sign in: run `nbagent mcp login {self.name}`")
        await self.callback.expect(url)
        self._pending = True
        self._paused.enter_context(self._waiting())
        await self._on_link(url)

    async def _callback(self) -> AuthorizationCodeResult:
        try:
            async with asyncio.timeout(self._login_timeout):
                return await self.callback.wait()
        except TimeoutError:
            raise OAuthFlowError(
                f"MCP server {self.name!r}: no sign-in within {self._login_timeout:g} s (elicitation_timeout_sec)"
            ) from None
        finally:
            await self.callback.close()
            self._paused.close()

    def _tokens_saved(self) -> None:
        if self._pending:
            self._pending = False
            if self._on_completed is not None:
                self._on_completed()

    async def aclose(self) -> None:
        await self.callback.close()
        self._paused.close()
