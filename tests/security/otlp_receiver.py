"""A tiny OTLP/HTTP logs receiver on 127.0.0.1: it decodes each protobuf export request as a
collector does and keeps the records, the raw bodies and the headers they came with."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest, ExportLogsServiceResponse
from opentelemetry.proto.common.v1.common_pb2 import AnyValue


def plain(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [plain(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


class OtlpReceiver:
    """``with OtlpReceiver() as rx:`` serves ``rx.endpoint`` (``/v1/logs``) until the block ends."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []
        self.resources: list[dict[str, Any]] = []
        self.bodies: list[bytes] = []
        self.headers: list[dict[str, str]] = []
        self.arrived = threading.Condition()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1/logs"

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()

    def named(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r["event_name"] == name]

    def _take(self, body: bytes, headers: dict[str, str]) -> None:
        request = ExportLogsServiceRequest()
        request.ParseFromString(body)
        with self.arrived:
            self.bodies.append(body)
            self.headers.append(headers)
            for resource_logs in request.resource_logs:
                self.resources.append({a.key: plain(a.value) for a in resource_logs.resource.attributes})
                for scope in resource_logs.scope_logs:
                    for rec in scope.log_records:
                        self.records.append({"event_name": rec.event_name, "body": plain(rec.body),
                                             **{a.key: plain(a.value) for a in rec.attributes}})
            self.arrived.notify_all()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                return None

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path != "/v1/logs" or self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_response(404)
                    self.end_headers()
                    return
                receiver._take(body, {k.lower(): v for k, v in self.headers.items()})
                data = ExportLogsServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
