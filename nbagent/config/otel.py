"""``[otel]``: where the audit trail is exported as OpenTelemetry log records, by Codex's keys.

    [otel]
    environment = "prod"                  # resource attribute ``env``; default "dev"
    log_user_prompt = false               # a prompt's text in ``codex.user_prompt``; default off
    [otel.exporter.otlp-http]
    endpoint = "https://collector.example/v1/logs"
    protocol = "binary"
    headers = { "x-api-key" = "..." }

``exporter = "none"`` (the default) exports nothing. Codex also offers ``otlp-grpc``, a JSON
``protocol``, ``trace_exporter`` and ``metrics_exporter``; nbagent exports logs only, over
OTLP/HTTP in protobuf (the Python exporter's one encoding), and says so when another is named.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class OtlpHttp(_Strict):
    endpoint: str
    """The collector's logs URL, used as given (``.../v1/logs``)."""
    protocol: Literal["binary"] = "binary"
    """OTLP protobuf; Codex's ``"json"`` is not offered (the Python exporter sends protobuf only)."""
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    """Sent with every export (often a key): never logged, recorded or shown."""

    @field_validator("endpoint")
    @classmethod
    def _url(cls, endpoint: str) -> str:
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{endpoint!r} is not an http(s) URL with a host")
        if parts.username or parts.password:
            raise ValueError("credentials go in headers, not in the endpoint URL")
        return endpoint


class OtelConfig(_Strict):
    environment: str = "dev"
    """The resource's ``env`` attribute, telling one deployment's records from another's."""
    log_user_prompt: bool = False
    """Whether ``codex.user_prompt`` carries the prompt's text (redacted of the session's secrets); else only its length."""
    exporter: Literal["none"] | dict[Literal["otlp-http"], OtlpHttp] = "none"
    """Where records go: ``"none"``, or ``[otel.exporter.otlp-http]`` (Codex's ``otlp-grpc`` is not offered)."""

    @property
    def http(self) -> OtlpHttp | None:
        """The OTLP/HTTP exporter's settings, when export is on."""
        return self.exporter.get("otlp-http") if isinstance(self.exporter, dict) else None
