"""One streamable-HTTP MCP server shared by every user of a hub, stateless, with a bearer token
per user: the token says who calls, whatever the call claims.

Usage: python team_server.py PORT TOKENS_FILE RECORD_FILE

``TOKENS_FILE`` is JSON ``{token: user}``, readable by the server's account only. Each call of
``whoami`` is appended to ``RECORD_FILE`` as ``{"user": ..., "tool": ...}``: the identity the
server saw, for the deployment test to compare with the Linux user whose kernel called.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations


class PerUserTokens:
    """A token verifier over a fixed table: the token's user is the access token's client id."""

    def __init__(self, users: dict[str, str]) -> None:
        self.users = users

    async def verify_token(self, token: str) -> AccessToken | None:
        user = self.users.get(token)
        return AccessToken(token=token, client_id=user, scopes=[]) if user else None


def app(port: int, tokens: Path, record: Path):  # noqa: ANN201 - a Starlette app
    base = f"http://127.0.0.1:{port}"
    server = MCPServer(
        "team",
        instructions="The team's shared server.",
        token_verifier=PerUserTokens(json.loads(tokens.read_text())),
        auth=AuthSettings(issuer_url=base, resource_server_url=f"{base}/mcp", validate_token_resource=False),
    )

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def whoami() -> str:
        """Who this server knows the caller as."""
        access = get_access_token()
        user = access.client_id if access else None
        with record.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"user": user, "tool": "whoami"}) + "\n")
        return f"you are {user}"

    return server.streamable_http_app(stateless_http=True, json_response=True)


if __name__ == "__main__":
    port = int(sys.argv[1])
    uvicorn.run(app(port, Path(sys.argv[2]), Path(sys.argv[3])), host="127.0.0.1", port=port, log_level="warning")
