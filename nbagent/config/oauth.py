"""``[mcp_servers.NAME.oauth]``: how nbagent presents itself to a server's authorization server.

Without this table nbagent registers itself dynamically (RFC 7591). A client registered by hand
with the provider is named here; its secret is read from an environment variable, never from
the file, so a config file can be shared without leaking it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

TokenEndpointAuthMethod = Literal["none", "client_secret_post", "client_secret_basic"]


class OAuthSettings(BaseModel):
    """Per-server OAuth client settings; every key is optional."""

    model_config = ConfigDict(extra="forbid", strict=True)

    client_id: str | None = None
    """A client registered beforehand: no dynamic registration is attempted."""
    client_secret_env_var: str | None = None
    """Environment variable holding that client's secret (confidential clients only)."""
    client_metadata_url: str | None = None
    """An HTTPS URL of a Client ID Metadata Document, used as ``client_id`` when the
    authorization server supports it (``client_id_metadata_document_supported``)."""
    token_endpoint_auth_method: TokenEndpointAuthMethod | None = None
    """How the client authenticates at the token endpoint; by default ``client_secret_post``
    with a secret, ``none`` without (and what dynamic registration assigns)."""
