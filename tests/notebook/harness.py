"""A real ipykernel driven through jupyter_client, the way JupyterLab drives it.

Cells are sent with ``cellId`` metadata (as a notebook UI does), iopub is collected, widget
models are tracked from ``comm_open``/``comm_msg`` (state and ``update`` messages), and clicks
or value changes are sent back as comm messages, exactly as the browser's widget manager does.
Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jupyter_client.manager import KernelManager

REPO = Path(__file__).resolve().parents[2]


def demo_config(workdir: Path, replay: Path, record: Path, *, extra: str = "") -> None:
    """``nbagent.toml`` for the kernel: the replay model and the demo MCP server."""
    notes = workdir / "notes"
    (workdir / "nbagent.toml").write_text(
        f'model = "replay:{replay}"\n'
        'approval_policy = "on-request"\n'
        "[mcp_servers.demo]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f'args = ["-m", "nbagent.examples.demo_server", "--dir", {json.dumps(str(notes))}, "--record", {json.dumps(str(record))}]\n'
        f"env = {{ PYTHONPATH = {json.dumps(str(REPO))} }}\n"
        "startup_timeout_sec = 30\n" + extra,
        encoding="utf-8",
    )


class Widget:
    def __init__(self, comm_id: str, state: dict[str, Any]) -> None:
        self.comm_id = comm_id
        self.state = dict(state)

    @property
    def model(self) -> str:
        return self.state.get("_model_name", "")

    def __repr__(self) -> str:
        return f"<{self.model} {self.comm_id[:8]} {self.state.get('description') or self.state.get('value')!r}>"


class Kernel:
    def __init__(self, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.km = KernelManager(kernel_name="python3")
        full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
        full_env.pop("NBAGENT_FRONTEND", None)
        self.km.start_kernel(cwd=str(cwd), env=full_env, extra_arguments=[])
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.widgets: dict[str, Widget] = {}
        self.iopub: list[dict[str, Any]] = []
        self.last_sent = ""

    # -- plumbing --------------------------------------------------------------------------

    def pump(self, seconds: float = 0.0) -> None:
        """Read iopub for up to ``seconds`` (at least what is already there)."""
        deadline = time.monotonic() + seconds
        while True:
            timeout = max(0.0, deadline - time.monotonic())
            try:
                msg = self.kc.get_iopub_msg(timeout=timeout if timeout > 0 else 0.01)
            except queue.Empty:
                if time.monotonic() >= deadline:
                    return
                continue
            self._track(msg)

    def _track(self, msg: dict[str, Any]) -> None:
        self.iopub.append(msg)
        kind, content = msg["header"]["msg_type"], msg["content"]
        if kind == "comm_open" and content.get("target_name") == "jupyter.widget":
            self.widgets[content["comm_id"]] = Widget(content["comm_id"], content["data"].get("state", {}))
        elif kind == "comm_msg":
            data = content.get("data", {})
            w = self.widgets.get(content["comm_id"])
            if w is not None and data.get("method") in ("update", "echo_update"):
                w.state.update(data.get("state", {}))

    def execute(self, code: str, *, ui: bool = True, wait: bool = True, timeout: float = 60) -> dict[str, Any]:
        """Run one cell; ``ui`` sends the ``cellId`` a notebook UI sends. Returns the reply."""
        metadata = {"cellId": str(uuid.uuid4())} if ui else {}
        msg = self.kc.session.msg(
            "execute_request",
            {"code": code, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
            metadata=metadata,
        )
        self.kc.shell_channel.send(msg)
        msg_id = msg["header"]["msg_id"]
        if not wait:
            return {"msg_id": msg_id}
        return self.reply(msg_id, timeout)

    def reply(self, msg_id: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.pump(0.05)
            try:
                reply = self.kc.get_shell_msg(timeout=0.05)
            except queue.Empty:
                continue
            if reply["parent_header"].get("msg_id") == msg_id:
                self.pump(0.2)
                return reply
        raise TimeoutError(f"no execute_reply within {timeout}s")

    def outputs(self, msg_id: str) -> str:
        """All text a cell produced on iopub (stream, errors, text/plain)."""
        parts = []
        for m in self.iopub:
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            c = m["content"]
            t = m["header"]["msg_type"]
            if t == "stream":
                parts.append(c["text"])
            elif t == "error":
                parts.append("\n".join(c["traceback"]))
            elif t in ("execute_result", "display_data"):
                parts.append(c["data"].get("text/plain", ""))
        return "".join(parts)

    def wait_output(self, msg_id: str, text: str, timeout: float = 30) -> str:
        """The cell's output once it contains ``text`` (output from tasks the cell started
        arrives after its reply)."""
        deadline = time.monotonic() + timeout
        while True:
            out = self.outputs(msg_id)
            if text in out:
                return out
            if time.monotonic() > deadline:
                raise TimeoutError(f"{text!r} not in the cell's output within {timeout}s: {out!r}")
            self.pump(0.05)

    def run(self, code: str, *, ui: bool = True, timeout: float = 60) -> tuple[str, str]:
        """Run one cell to its reply; ``(msg_id, output so far)``; the cell must not fail."""
        reply = self.execute(code, ui=ui, timeout=timeout)
        msg_id = reply["parent_header"]["msg_id"]
        assert reply["content"]["status"] == "ok", (code, self.outputs(msg_id))
        return msg_id, self.outputs(msg_id)

    def eval(self, expr: str, timeout: float = 30) -> Any:
        """Evaluate ``expr`` in the kernel and return it (JSON round trip)."""
        reply = self.execute(f"import json as _j; print('@@' + _j.dumps({expr}, default=str))", ui=False, timeout=timeout)
        out = self.outputs(reply["parent_header"]["msg_id"])
        for line in out.splitlines():
            if line.startswith("@@"):
                return json.loads(line[2:])
        raise AssertionError(f"eval failed: {out}")

    # -- widgets ---------------------------------------------------------------------------

    def find(self, model: str, **state: Any) -> list[Widget]:
        return [w for w in self.widgets.values() if w.model == model and all(w.state.get(k) == v for k, v in state.items())]

    def wait_for(self, model: str, timeout: float = 30, **state: Any) -> Widget:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.find(model, **state)
            if found:
                return found[-1]
            self.pump(0.05)
        raise TimeoutError(f"no {model} {state} within {timeout}s; have {list(self.widgets.values())[-10:]}")

    def comm_send(self, widget: Widget, data: dict[str, Any]) -> None:
        msg = self.kc.session.msg("comm_msg", {"comm_id": widget.comm_id, "data": data})
        self.kc.shell_channel.send(msg)
        self.last_sent = msg["header"]["msg_id"]

    def wait_handled(self, timeout: float = 30) -> None:
        """Until the kernel reported idle for the last comm message sent: it handles them in
        order, so every earlier update is applied too."""
        deadline = time.monotonic() + timeout
        while not any(
            m["header"]["msg_type"] == "status" and m["content"]["execution_state"] == "idle"
            and m["parent_header"].get("msg_id") == self.last_sent
            for m in self.iopub
        ):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the kernel did not handle the last widget message within {timeout}s")
            self.pump(0.05)

    def click(self, widget: Widget) -> None:
        self.comm_send(widget, {"method": "custom", "content": {"event": "click"}})

    def set_state(self, widget: Widget, **state: Any) -> None:
        self.comm_send(widget, {"method": "update", "state": state, "buffer_paths": []})
        widget.state.update(state)

    def interrupt(self) -> None:
        self.km.interrupt_kernel()

    def close(self) -> None:
        try:
            self.kc.stop_channels()
        finally:
            self.km.shutdown_kernel(now=True)


SERVERS = REPO / "tests" / "servers"
HISTORY = "[i.model_dump(mode='json') for i in __import__('nbagent.notebook', fromlist=['_']).session().snapshot().items]"


def script(path: Path, *responses: dict[str, Any]) -> Path:
    """A replay-model script: each model request takes the next response."""
    path.write_text(json.dumps({"responses": list(responses)}), encoding="utf-8")
    return path


def executions(record: Path) -> list[dict[str, Any]]:
    """What a server says it executed (one JSON line per tool run)."""
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines() if line.strip()]


def outputs_of(kernel: Kernel) -> list[dict[str, Any]]:
    """The function-call outputs in the kernel session's thread history."""
    return [i for i in kernel.eval(HISTORY) if i["type"] == "function_call_output"]


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    """One replay response that calls ``tool``."""
    return {"text": f"Calling {tool}.", "tool_calls": [{"name": tool, "arguments": arguments}]}


EXPERIMENT = {
    "title": "Baseline run", "owner_email": "you@example.com", "runs": 12, "learning_rate": 0.125,
    "public": True, "optimizer": "sgd", "tags": ["nlp", "rl"], "start": "2025-03-04",
}
"""What ``fill_experiment`` answers to the demo server's ``log_experiment`` form."""


def fill_experiment(kernel: Kernel, type_text: Callable[[Widget, str], None] | None = None) -> dict[str, Any]:
    """Answer the open ``log_experiment`` form with ``EXPERIMENT``, as the browser does: each
    text field in one update, or through ``type_text`` (key by key), and one update per other
    widget; returns the content the server must record."""
    texts = [w for w in kernel.find("TextModel") if w.state.get("placeholder") in ("", "name@example.com", "YYYY-MM-DD")]
    title, email, start = texts[-3:]
    for widget, key in ((title, "title"), (email, "owner_email"), (start, "start")):
        if type_text is None:
            kernel.set_state(widget, value=EXPERIMENT[key])
        else:
            type_text(widget, EXPERIMENT[key])
    kernel.set_state(kernel.find("BoundedIntTextModel")[-1], value=EXPERIMENT["runs"])
    kernel.set_state(kernel.find("BoundedFloatTextModel")[-1], value=EXPERIMENT["learning_rate"])
    kernel.set_state(kernel.find("CheckboxModel")[-1], value=EXPERIMENT["public"])
    optimizer = kernel.find("DropdownModel")[-1]
    kernel.set_state(optimizer, index=optimizer.state["_options_labels"].index(EXPERIMENT["optimizer"]))
    tags = kernel.find("SelectMultipleModel")[-1]
    kernel.set_state(tags, index=[tags.state["_options_labels"].index(t) for t in EXPERIMENT["tags"]])
    return dict(EXPERIMENT)
