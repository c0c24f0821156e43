"""The audit trail exported as OpenTelemetry log records, when ``[otel]`` names an exporter and
``opentelemetry-sdk`` is installed (``pip install nbagent[otel]``).

Each audit line (``codex.tool_decision``, ``codex.tool_result``...) becomes one log record of the
same name and fields, and two of Codex's own events are added from the session's events:
``codex.user_prompt`` (the prompt's length; its text only with ``log_user_prompt``, redacted) and
``codex.sse_event`` for each model response's token counts. Records go out in batches on the
SDK's own thread, so a tool call never waits for the collector; a session that ends flushes
them. Nothing is exported when ``[otel]`` is off: the session then holds none of this.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nbagent.config import Config
from nbagent.config.otel import OtelConfig, OtlpHttp
from nbagent.core.audit import os_user
from nbagent.core.bus import EventBus
from nbagent.protocol import Event, TokenCount, TurnStarted
from nbagent.store.audit import AuditLog

log = logging.getLogger(__name__)

USER_PROMPT = "codex.user_prompt"
SSE_EVENT = "codex.sse_event"
SERVICE = "nbagent"
EXPORT_TIMEOUT_SEC = 3
"""One batch's export, retries included: what a session's end waits at most for a collector
that does not answer."""


def _version() -> str:
    try:
        return importlib.metadata.version("nbagent")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class OtelExport:
    """One ``LoggerProvider`` with an OTLP/HTTP exporter behind a batch processor."""

    def __init__(self, settings: OtelConfig, http: OtlpHttp, who: dict[str, Any]) -> None:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.resources import Resource

        resource = Resource.create({"service.name": SERVICE, "service.version": _version(), "env": settings.environment})
        self._provider = LoggerProvider(resource=resource)
        exporter = OTLPLogExporter(endpoint=http.endpoint, headers=dict(http.headers), timeout=EXPORT_TIMEOUT_SEC)
        self._provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
        self._logger = self._provider.get_logger(SERVICE, _version())
        self._who = who
        self.log_user_prompt = settings.log_user_prompt

    def emit(self, record: dict[str, Any]) -> None:
        """One audit record (``{"event": NAME, "at": ..., fields}``) as a log record named so."""
        name = str(record.get("event", ""))
        at = float(record.get("at") or time.time())
        attributes = {"event.name": name, "event.timestamp": _iso(at)}
        for key, value in record.items():
            if key in ("event", "at") or value is None:
                continue
            attributes["conversation.id" if key == "thread_id" else key] = _attribute(value)
        self._logger.emit(timestamp=int(at * 1e9), body=name, attributes=attributes, event_name=name)

    def watcher(self, redact: Callable[[str], str]) -> Callable[[Event], None]:
        """Codex's prompt and token events, from the session's bus (``EventBus.watch``)."""

        def on_event(event: Event) -> None:
            msg = event.msg
            if isinstance(msg, TurnStarted):
                prompt = redact(msg.prompt) if self.log_user_prompt else "[REDACTED]"
                self._event(event, USER_PROMPT, prompt_length=len(msg.prompt), prompt=prompt)
            elif isinstance(msg, TokenCount) and msg.info is not None:
                last = msg.info.last_token_usage
                self._event(event, SSE_EVENT, **{
                    "event.kind": "response.completed", "input_token_count": last.input_tokens,
                    "output_token_count": last.output_tokens, "cached_token_count": last.cached_input_tokens,
                    "reasoning_token_count": last.reasoning_output_tokens, "tool_token_count": 0,
                })

        return on_event

    def _event(self, event: Event, name: str, **fields: Any) -> None:
        self.emit({"event": name, "at": event.at, **self._who, "thread_id": event.thread_id,
                   "turn_id": event.turn_id, **fields})

    def shutdown(self) -> None:
        """Send what is batched (within ``EXPORT_TIMEOUT_SEC``) and stop."""
        try:
            self._provider.shutdown()
        except Exception as exc:  # boundary: a collector's failure never fails the session's end
            log.warning("OpenTelemetry export: %s", exc)


class ExportingLog(AuditLog):
    """The audit log that also exports each line it writes (the hook ``AuditTrail`` writes to)."""

    def __init__(self, folder: Path, export: OtelExport) -> None:
        super().__init__(folder)
        self.export = export

    def write_many(self, records: list[dict[str, Any]], at: float | None = None) -> None:
        try:
            super().write_many(records, at)
        finally:  # a full disk does not keep the line from the collector
            for record in records:
                self.export.emit(record)


def start_export(
    config: Config, bus: EventBus, redact: Callable[[str], str], warn: Callable[[str], object]
) -> OtelExport | None:
    """The exporter ``[otel]`` asks for, watching ``bus`` for Codex's prompt and token events; or
    ``None`` (off, or the SDK missing: said once), and then nothing of it is on any path."""
    settings = config.otel
    http = settings.http
    if http is None:
        return None
    try:
        export = OtelExport(settings, http, {"user": os_user(), "uid": os.getuid()})
    except ImportError:
        warn("[otel] names an exporter, but opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http are not "
             "installed (pip install 'nbagent[otel]'): the audit trail is not exported")
        return None
    bus.watch(export.watcher(redact))
    return export


async def finish(export: OtelExport | None) -> None:
    """Send what is batched as the session ends, off the event loop."""
    if export is not None:
        await asyncio.to_thread(export.shutdown)


def exporting(audit: AuditLog, export: OtelExport | None) -> AuditLog:
    """``audit`` itself without an exporter; with one, the same log exporting each line."""
    return audit if export is None else ExportingLog(audit.folder, export)


def _iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + f".{int(at % 1 * 1000):03d}Z"


def _attribute(value: Any) -> Any:
    """What an OpenTelemetry attribute can hold: a scalar, or a list of strings."""
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return str(value)
