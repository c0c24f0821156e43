"""Where an authorization server's metadata should decide what the client does, and the SDK
leaves it to the client's own settings.

A client registered by hand is often given only an id and a secret; how to present them at the
token endpoint is what the server says it accepts (``token_endpoint_auth_methods_supported``,
RFC 8414 §2), not a guess made before its metadata was read.
"""

from __future__ import annotations

from mcp.client.auth.oauth2 import OAuthContext

SECRET_METHODS = ("client_secret_basic", "client_secret_post")
"""The ways to present a client secret, in the order RFC 6749 §2.3.1 prefers them."""


def fit_token_auth(context: OAuthContext) -> None:
    """Before a token request: a client holding a secret whose method the authorization server
    does not list switches to one it lists. Nothing changes when the server lists none, when
    the method is listed, or when the client has no secret to present."""
    info, metadata = context.client_info, context.oauth_metadata
    if info is None or metadata is None or not info.client_secret:
        return
    supported = metadata.token_endpoint_auth_methods_supported
    if not supported or info.token_endpoint_auth_method in supported:
        return
    for method in SECRET_METHODS:
        if method in supported:
            info.token_endpoint_auth_method = method
            return
