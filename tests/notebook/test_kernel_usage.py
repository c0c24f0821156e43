"""Token usage in a real kernel whose model is the local OpenAI-compatible server, reached by
the real ``openai`` client over HTTP: the turn's header shows its tokens (widget and text), and
``%agent`` shows the thread's and the day's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nbagent.examples.openai_compatible_server import ScriptedChatServer
from tests.notebook.harness import Kernel

pytestmark = pytest.mark.timeout(180)

USAGE = {"input_tokens": 1200, "cached_input_tokens": 1024, "output_tokens": 30, "reasoning_output_tokens": 8,
         "total_tokens": 1230}


def local_model_config(workdir: Path, server: ScriptedChatServer, extra: str = "") -> None:
    (workdir / "nbagent.toml").write_text(
        'model = "scripted-local-model"\nmodel_provider = "local"\napproval_policy = "on-request"\n'
        f"[model_providers.local]\nbase_url = {json.dumps(server.base_url)}\nwire_api = \"chat\"\n"
        'env_key = "LOCAL_MODEL_KEY"\n' + extra,
        encoding="utf-8",
    )


@pytest.fixture
def local_kernel(tmp_path: Path):
    with ScriptedChatServer([{"text": "Hello there.", "usage": USAGE}, {"text": "Again."}]) as server:
        local_model_config(tmp_path, server)
        kernel = Kernel(tmp_path, env={"NBAGENT_HOME": str(tmp_path / "home"), "LOCAL_MODEL_KEY": server.token})
        try:
            assert kernel.execute("%load_ext nbagent")["content"]["status"] == "ok"
            yield kernel, server
        finally:
            kernel.close()


def test_the_header_and_agent_status_show_the_tokens(local_kernel) -> None:
    kernel, server = local_kernel
    kernel.run("%%agent --wait\nsay hello")
    badges = [w.state.get("value", "") for w in kernel.find("HTMLModel") if "tokens:" in w.state.get("value", "")]
    assert badges and "1,200 in (1,024 cached), 30 out (8 reasoning)" in badges[-1]
    assert server.requests[0]["stream_options"] == {"include_usage": True}

    _, text = kernel.run("%%agent --wait\nagain", ui=False)
    assert "tokens: " in text and "in the thread" in text  # the text view: once, after the turn

    _, status = kernel.run("%agent")
    (line,) = [ln for ln in status.splitlines() if ln.startswith("tokens:")]
    assert "in this thread (" in line and "1,024 cached" in line, line
    total = int(line.split()[1].replace(",", ""))
    assert total > USAGE["total_tokens"]  # both turns: the scripted one and the one the server counted
    assert f"{total:,} today" in line, line
