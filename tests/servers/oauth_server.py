"""An OAuth-protected streamable HTTP MCP server that is its own authorization server, on
127.0.0.1:PORT (the SDK's server-side auth: metadata, registration, authorize, token, revoke).

Usage: python oauth_server.py PORT   (env: ACCESS_TTL seconds, default 3600; RECORD_FILE;
PRE_CLIENT_ID, PRE_CLIENT_SECRET, PRE_REDIRECT_URI: a client registered beforehand;
AUTHORIZE_AT, TOKEN_AT: the endpoints its metadata names instead of its own)

``/authorize`` sends the browser to a consent page; following its "Allow" link redirects to the
client's loopback callback with the code, as a person's click would. Open test routes:
``/health``, ``/test/state`` (what the AS did, as JSON, tokens included so a test can look for
them elsewhere) and ``POST /test/revoke`` (every issued token stops working).
"""

from __future__ import annotations

import os
import secrets
import sys
import time
from typing import Any

import uvicorn
from _record import record
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import build_metadata
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 0
BASE = f"http://127.0.0.1:{PORT}"
ACCESS_TTL = int(os.environ.get("ACCESS_TTL", "3600"))
SCOPES = ["mcp:read", "mcp:write"]


class Provider:
    """Everything in memory; counts what happened for ``/test/state``."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.pending: dict[str, tuple[str, AuthorizationParams]] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.events: list[dict[str, Any]] = []
        self.issued: list[str] = []
        """Every token ever issued, access and refresh, so a test can look for any of them."""

    def note(self, kind: str, **data: Any) -> None:
        self.events.append({"kind": kind, **data})

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.note("register", client_id=client_info.client_id, redirect_uris=[str(u) for u in client_info.redirect_uris or []])

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        txn = secrets.token_urlsafe(16)
        assert client.client_id is not None
        self.pending[txn] = (client.client_id, params)
        self.note("authorize", scopes=params.scopes, resource=params.resource, code_challenge=params.code_challenge)
        return f"{BASE}/consent?txn={txn}"

    def approve(self, txn: str) -> str:
        client_id, params = self.pending.pop(txn)
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource,
        )  # fmt: skip
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = "at-" + secrets.token_urlsafe(24), "rt-" + secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + ACCESS_TTL, resource=resource
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        self.issued += [access, refresh]
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=ACCESS_TTL, refresh_token=refresh,
                          scope=" ".join(scopes))  # fmt: skip

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        self.note("code_exchange")
        return self._issue(authorization_code.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        self.note("refresh")
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            self.note("rejected_token", token=token)
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    async def exchange_identity_assertion(self, *args: Any) -> OAuthToken:
        raise NotImplementedError


provider = Provider()
if os.environ.get("PRE_CLIENT_ID"):  # a client registered by hand, as with GitHub or Linear
    provider.clients[os.environ["PRE_CLIENT_ID"]] = OAuthClientInformationFull(
        client_id=os.environ["PRE_CLIENT_ID"], client_secret=os.environ.get("PRE_CLIENT_SECRET"),
        token_endpoint_auth_method="client_secret_post", redirect_uris=[os.environ["PRE_REDIRECT_URI"]],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"], response_types=["code"], scope=" ".join(SCOPES),
    )  # fmt: skip
mcp = MCPServer(
    "oauth-test",
    instructions="OAuth test server.",
    auth_server_provider=provider,
    auth=AuthSettings(
        issuer_url=BASE,  # type: ignore[arg-type]
        resource_server_url=f"{BASE}/mcp",  # type: ignore[arg-type]
        validate_token_resource=False,
        required_scopes=["mcp:read"],
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=SCOPES, default_scopes=SCOPES),
        revocation_options=RevocationOptions(enabled=True),
    ),
)


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    record("add", a=a, b=b)
    return a + b


@mcp.tool()
def credentials() -> str:
    """Say which access token this call came with (a server that echoes what it is sent)."""
    token = get_access_token()
    return f"you signed in with {token.token if token else None}"


@mcp.custom_route("/health", methods=["GET"])
async def health(request: Request) -> Response:
    return PlainTextResponse("ok")


@mcp.custom_route("/consent", methods=["GET"])
async def consent(request: Request) -> Response:
    txn = request.query_params.get("txn", "")
    if txn not in provider.pending:
        return PlainTextResponse("unknown request", status_code=400)
    return HTMLResponse(f'<p>nbagent asks for access.</p><a id="allow" href="/consent/allow?txn={txn}">Allow</a>')


@mcp.custom_route("/consent/allow", methods=["GET"])
async def allow(request: Request) -> Response:
    txn = request.query_params.get("txn", "")
    if txn not in provider.pending:
        return PlainTextResponse("unknown request", status_code=400)
    return RedirectResponse(provider.approve(txn), status_code=302)


@mcp.custom_route("/test/state", methods=["GET"])
async def state(request: Request) -> Response:
    return JSONResponse({"events": provider.events, "issued": provider.issued})


@mcp.custom_route("/test/revoke", methods=["POST"])
async def revoke_all(request: Request) -> Response:
    provider.access.clear()
    provider.refresh.clear()
    provider.note("revoke_all")
    return PlainTextResponse("revoked")


async def metadata_elsewhere(request: Request) -> Response:
    """The SDK's metadata, naming ``AUTHORIZE_AT`` and ``TOKEN_AT`` where they are set."""
    settings = mcp.settings.auth
    assert settings is not None and settings.client_registration_options and settings.revocation_options
    metadata = build_metadata(settings.issuer_url, None, settings.client_registration_options, settings.revocation_options)
    metadata.authorization_endpoint = os.environ.get("AUTHORIZE_AT", metadata.authorization_endpoint)  # type: ignore[assignment]
    metadata.token_endpoint = os.environ.get("TOKEN_AT", metadata.token_endpoint)  # type: ignore[assignment]
    return JSONResponse(metadata.model_dump(mode="json", exclude_none=True))


if __name__ == "__main__":
    app = mcp.streamable_http_app()
    if os.environ.get("AUTHORIZE_AT") or os.environ.get("TOKEN_AT"):
        app.router.routes.insert(0, Route("/.well-known/oauth-authorization-server", metadata_elsewhere))
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
