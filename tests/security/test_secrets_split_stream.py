"""A secret the model streams in pieces (``sk-te``, then ``st-0123…``) is shown whole nowhere:
not by ``nbagent run`` (plain or ``--json``), not in the progress ``nbagent mcp-server`` sends its
client, not in a cell's output even for a moment. No fragment holds the secret, so each front end
redacts the stream, not the fragment; and none loses the text around it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from tests.notebook.harness import Kernel
from tests.security.store_env import nbagent
from tests.server.conftest import MODES, Seen, ServerEnv, connect
from tests.server.conftest import senv as senv  # noqa: F401  (the fixture)

API_KEY = "sk-test-0123456789abcdef"
OTHER = "sk-test-0123-other-tok"
"""A second secret (an environment value named like a token) sharing ``sk-test-0123`` with the key."""
SECRETS = (API_KEY, OTHER)

MESSAGE = ["The key is sk-te", "st-0123", "456789abcdef; the other is sk-test-01", "23-other-tok. Cut: sk-test"]
"""The key over three fragments, the other secret over two, and a prefix of both left at the end."""
SHOWN = "The key is [redacted]; the other is [redacted]. Cut: sk-test"
REASONING = ["Thinking of sk-test-0123456", "789abcdef now."]
THOUGHT = "Thinking of [redacted] now."
pytestmark = pytest.mark.timeout(180)


def split(message: list[str], reasoning: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    """A Chat Completions step whose text (and reasoning) deltas are exactly these fragments: the
    fake server sends one delta per word, and each placeholder word's delta is replaced by one."""
    fragments = {"content": iter(message), "reasoning_content": iter(reasoning or [])}

    def edit(data: dict[str, Any]) -> None:
        for choice in data.get("choices") or []:
            for key, rest in fragments.items():
                if choice["delta"].get(key):
                    choice["delta"][key] = next(rest)

    step = {"text": " ".join(["x"] * len(message)), "edit": edit, **extra}
    if reasoning:
        step["reasoning"] = " ".join(["x"] * len(reasoning))
    return step


def user_config(tmp_path: Path, openai_server: FakeOpenAIServer) -> Path:
    """A home whose user config (read wherever nbagent runs) points at the fake model server."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text(
        f'model = "m"\nmodel_provider = "local"\n'
        f'[model_providers.local]\nbase_url = "{openai_server.base_url}"\nwire_api = "chat"\n'
    )
    return home


def run_cli(openai_server: FakeOpenAIServer, tmp_path: Path, step: dict[str, Any], *flags: str) -> subprocess.CompletedProcess[str]:
    openai_server.script([step])
    home = user_config(tmp_path, openai_server)
    return nbagent("run", *flags, "hi", home=home, cwd=tmp_path, OPENAI_API_KEY=API_KEY, SPLIT_TOKEN=OTHER)


def assert_hidden(*shown: str) -> None:
    for secret in SECRETS:
        for text in shown:
            assert secret not in text, text


def test_nbagent_run_never_prints_a_secret_split_across_fragments(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    run = run_cli(openai_server, tmp_path, split(MESSAGE, REASONING))
    assert run.returncode == 0, run.stderr
    assert SHOWN + "\n" in run.stdout
    assert_hidden(run.stdout, run.stderr)


def test_nbagent_run_json_deltas_join_to_the_redacted_text(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    run = run_cli(openai_server, tmp_path, split(MESSAGE, REASONING), "--json")
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines()]

    def joined(kind: str) -> str:
        return "".join(e["delta"] for e in events if e["type"] == kind)

    assert joined("agent_message_delta") == SHOWN
    assert joined("reasoning_delta") == THOUGHT
    assert [e["text"] for e in events if e["type"] == "agent_message"] == [SHOWN]
    assert all(e["delta"] for e in events if e["type"].endswith("_delta")), "no empty delta is printed"
    assert_hidden(joined("agent_message_delta"), joined("reasoning_delta"), run.stdout)


def test_a_stream_cut_mid_secret_shows_its_held_text_when_the_turn_ends(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    """The server fails after three deltas: the tail that could still have begun a secret is
    shown when the turn fails, not lost, and the secret before it stays hidden."""
    fragments = ["Cut off: sk-te", "st-0123456789abcdef, then sk-te", "st-01", "never sent"]
    run = run_cli(openai_server, tmp_path, split(fragments, error_mid_stream=500, fail_after=3))
    assert run.returncode == 1, run.stdout
    assert "Cut off: [redacted], then sk-test-01" in run.stdout, run.stdout
    assert "error:" in run.stderr and "never sent" not in run.stdout + run.stderr
    assert_hidden(run.stdout, run.stderr)


@pytest.mark.parametrize("mode", MODES)
async def test_the_mcp_servers_progress_never_carries_a_split_secret(mode: str, senv: ServerEnv, openai_server: FakeOpenAIServer) -> None:
    """The first fragment fills one progress message (300 characters) and ends with the secret's
    start; the rest of the secret begins the next one."""
    filler = "word " * 59
    openai_server.script([split([filler + "sk-te", "st-0123456789abcdef done."])])
    config = {"model": "m", "model_providers": {"openai": {"base_url": openai_server.base_url, "wire_api": "chat"}}}
    senv_env = senv.env
    senv.env = lambda: {**senv_env(), "OPENAI_API_KEY": API_KEY}  # type: ignore[method-assign]
    seen = Seen()
    async with connect("stdio", mode, senv, seen=seen) as client:
        result = await client.call_tool("agent", {"prompt": "hi", "config": config}, progress_callback=seen.on_progress)
    assert result.structured_content["text"] == filler + "[redacted] done.", result
    progress = "".join(m or "" for m in seen.progress)
    assert filler.strip() in progress, seen.progress
    assert_hidden(progress, json.dumps([seen.logs, result.model_dump()], default=str))


def _outputs_shown(iopub: list[dict[str, Any]]) -> Iterator[str]:
    """Every ``outputs`` state a widget was sent (each update of a streaming message)."""
    for msg in iopub:
        data = msg["content"].get("data") if msg["header"]["msg_type"] in ("comm_open", "comm_msg") else None
        state = (data or {}).get("state") or {}
        if "outputs" in state:
            yield json.dumps(state["outputs"])


def test_a_cell_never_shows_a_split_secret_even_while_it_streams(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    """Deltas come 0.2 s apart, longer than the display's coalescing interval, so the cell is
    redrawn after each fragment; no redraw may show a secret, and the last shows the message."""
    home = user_config(tmp_path, openai_server)
    openai_server.script([split(MESSAGE, REASONING, delay=0.2)])
    kernel = Kernel(tmp_path, env={"NBAGENT_HOME": str(home), "OPENAI_API_KEY": API_KEY, "SPLIT_TOKEN": OTHER})
    try:
        kernel.run("%load_ext nbagent")
        kernel.run("%%agent --wait\nhi", timeout=120)
        shown = list(_outputs_shown(kernel.iopub))
        partial = [s for s in shown if "The key is" in s and SHOWN not in s]
        assert partial, "the message was not drawn while it streamed: this test would show nothing"
        assert any(SHOWN in s for s in shown) and any(THOUGHT in s for s in shown), shown
        assert_hidden(*shown, json.dumps(kernel.iopub, default=str))
    finally:
        kernel.close()
