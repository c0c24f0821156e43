"""A server that hands back the secret it was given (in a result, nested, and in its tool's
description) gets none of it into the cell: the tool card, the approval panel and the turn's
widgets show what the rollout holds, redacted."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.notebook.harness import Kernel

SERVERS = Path(__file__).resolve().parents[1] / "servers"
SECRET = "tok-SECRET-card-8812"
pytestmark = pytest.mark.timeout(180)


def test_a_result_echoing_the_servers_secret_is_redacted_in_every_widget(tmp_path: Path) -> None:
    home = tmp_path / "home"
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [
        {"text": "Checking.", "tool_calls": [{"name": "mcp__leaky__whoami", "arguments": {"note": {"n": 1}}}]},
        {"text": "Done."},
    ]}))  # fmt: skip
    (tmp_path / "nbagent.toml").write_text(
        f'model = "replay:{script}"\nhome = "{home}"\n'
        f"[mcp_servers.leaky]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(SERVERS / 'leaky.py'))}]\n"
        f'env = {{ LEAKY_TOKEN = "{SECRET}" }}\n'
    )
    kernel = Kernel(tmp_path, env={"NBAGENT_HOME": str(home)})
    try:
        kernel.run("%load_ext nbagent")
        cell = kernel.execute("%%agent --wait --policy on-request\nwho am i", wait=False)
        panel = kernel.wait_for("ButtonModel", timeout=120, description="Approve")
        shown = json.dumps([w.state for w in kernel.widgets.values()])
        assert "whoami" in shown and SECRET not in shown  # the panel shows the tool and its description
        kernel.click(panel)
        kernel.reply(cell["msg_id"], timeout=120)
        outputs = kernel.eval(
            "[i.output for i in __import__('nbagent.notebook', fromlist=['session']).session().snapshot().items"
            " if i.type == 'function_call_output']"
        )
        held = json.dumps(outputs)  # the history keeps the output as the rollout does
        assert "[redacted]" in held, "the server did not echo its secret: this test would show nothing"
        assert SECRET not in held
        shown = json.dumps([w.state for w in kernel.widgets.values()]) + kernel.outputs(cell["msg_id"])
        assert "Done." in shown and "[redacted]" in shown and SECRET not in shown
    finally:
        kernel.close()
