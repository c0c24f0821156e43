"""A comm double and a simulated extension, so the bridge is tested without a browser."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from nbagent.protocol.bridge import BRIDGE_PROTOCOL_VERSION, COMM_TARGET

GONE: dict[str, Any] = {"gone": True}
"""What a frontend returns for a page that is gone: not even an acknowledgement comes back."""

Frontend = Callable[[dict[str, Any]], dict[str, Any] | None]
"""Request envelope in, reply envelope out; ``None`` = acknowledge and stay silent (a hello is
never acknowledged, its reply is); ``GONE`` = nothing at all."""


class FakeComm:
    """Records what the kernel sends; delivers the frontend's replies later on the loop, as the
    kernel's shell dispatch would."""

    def __init__(self, frontend: Frontend, open_data: dict[str, Any], *, close_on_open: bool = False, answer_open: bool = True) -> None:
        self.frontend = frontend
        self.sent: list[dict[str, Any]] = [open_data]
        self.closed = False
        self._on_msg: Callable[[dict[str, Any]], Any] | None = None
        self._on_close: Callable[[dict[str, Any]], Any] | None = None
        loop = asyncio.get_running_loop()
        if close_on_open:
            loop.call_soon(self.remote_close)
        elif answer_open:
            loop.call_soon(self._answer, open_data)

    def send(self, data: Any = None, metadata: Any = None, buffers: Any = None) -> None:
        assert not self.closed, "send on a closed comm"
        self.sent.append(data)
        asyncio.get_running_loop().call_soon(self._answer, data)

    def on_msg(self, callback: Callable[[dict[str, Any]], Any]) -> None:
        self._on_msg = callback

    def on_close(self, callback: Callable[[dict[str, Any]], Any]) -> None:
        self._on_close = callback

    def close(self, data: Any = None, metadata: Any = None, buffers: Any = None) -> None:
        self.closed = True

    def remote_close(self) -> None:
        """The front end closed the comm (JupyterLab does this for an unknown target)."""
        self.closed = True
        if self._on_close:
            self._on_close({"content": {"data": {}}})

    def deliver(self, data: dict[str, Any]) -> None:
        assert self._on_msg is not None
        self._on_msg({"content": {"comm_id": "c1", "data": data}})

    def _answer(self, request: dict[str, Any]) -> None:
        if self.closed:
            return
        reply = self.frontend(request)
        if reply is GONE:
            return
        if isinstance(request, dict) and request.get("method") not in (None, "hello") and "id" in request:
            self.deliver({"ack": request["id"]})  # as the extension does before it acts
        if reply is not None:
            self.deliver(reply)


class FakeFactory:
    """A ``CommFactory`` that opens ``FakeComm``s and counts them."""

    def __init__(self, frontend: Frontend, *, close_on_open: bool = False) -> None:
        self.frontend = frontend
        self.close_on_open = close_on_open
        self.comms: list[FakeComm] = []
        self.targets: list[str] = []
        self.listening: dict[str, Callable[[Any, dict[str, Any]], None]] = {}

    def listen(self, target_name: str, callback: Callable[[Any, dict[str, Any]], None]) -> None:
        """The ``comm_listener``: the target pages open their own comms to."""
        self.listening[target_name] = callback

    def page_opens(self, frontend: Frontend, hello: dict[str, Any]) -> FakeComm:
        """A page loads and opens its own comm with its hello (a reload, a second tab)."""
        comm = FakeComm(frontend, hello, answer_open=False)
        self.listening[COMM_TARGET](comm, {"content": {"comm_id": f"page{len(self.comms)}", "data": hello}})
        self.comms.append(comm)
        return comm

    def __call__(self, target_name: str, data: dict[str, Any]) -> FakeComm:
        self.targets.append(target_name)
        comm = FakeComm(self.frontend, data, close_on_open=self.close_on_open)
        self.comms.append(comm)
        return comm


def ok(request: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    return {"id": request["id"], "ok": True, "result": result, "error": None}


def error(request: dict[str, Any], code: str, message: str) -> dict[str, Any]:
    return {"id": request["id"], "ok": False, "result": None, "error": {"code": code, "message": message}}


HELLO = {"protocol_version": BRIDGE_PROTOCOL_VERSION, "extension_version": "0.1.0", "app": "JupyterLab", "path": "work/demo.ipynb"}
