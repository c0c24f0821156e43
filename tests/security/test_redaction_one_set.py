"""What a cell shows, what the inspect views and files keep and what the rollout records hide the
same values: the thread's rollout redactor is the one all of them use. Each kind of secret the
rollout knows (the API key, a provider's header, a server's secret-named env value, its headers,
the variables its headers and bearer token come from, a secret-named variable of the process, and
a process secret or a secret-named variable added after the thread opened) is hidden in every one of them, and a server's
plain setting is shown in every one of them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from nbagent.core.inspect import DETAIL_CHARS
from nbagent.core.session import Session
from nbagent.notebook.agent import KernelAgent
from nbagent.notebook.runner import drive, prepare
from nbagent.secrets import add_process_secret

SERVERS = Path(__file__).resolve().parents[1] / "servers"
ENV = {
    "LAB_KEY_VAR": "sk-lab-apikey-secret-00",  # the provider's env_key: the API key
    "OTHER_HDR_VAR": "hdr-env-secret-04",  # a server header's variable
    "REMOTE_BEARER_VAR": "bearer-env-secret-05",  # a server's bearer token variable
    "MY_SERVICE_TOKEN": "named-env-secret-06",  # named like a secret in the process's environment
}
CONFIG_SECRETS = ["hdr-provider-secret-01", "tok-server-env-secret-02", "hdr-server-secret-03"]
LATE = "late-process-secret-07"
"""A process secret added once the session is open and has shown a turn (a server's token)."""
LATE_ENV = ("LATE_SERVICE_TOKEN", "late-env-secret-08")
"""A variable named like a secret, set in the process once the thread is open (as a cell would)."""
PLAIN = "plain-setting-visible"
"""A server's setting not named as a secret: history, shown everywhere."""
SECRETS = [*ENV.values(), *CONFIG_SECRETS, LATE, LATE_ENV[1]]


def _config(script: Path) -> str:
    return f"""
model = "replay:{script}"
model_provider = "lab"
[model_providers.lab]
env_key = "LAB_KEY_VAR"
http_headers = {{ X-Lab = "{CONFIG_SECRETS[0]}" }}
[mcp_servers.leaky]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(SERVERS / "leaky.py"))}]
env = {{ LEAKY_TOKEN = "{CONFIG_SECRETS[1]}", LEAKY_SETTING = "{PLAIN}" }}
[mcp_servers.remote]
url = "http://127.0.0.1:9/mcp"
enabled = false
http_headers = {{ X-Api = "{CONFIG_SECRETS[2]}" }}
env_http_headers = {{ X-Other = "OTHER_HDR_VAR" }}
bearer_token_env_var = "REMOTE_BEARER_VAR"
"""


@pytest.mark.timeout(120)
async def test_the_cell_the_inspect_views_and_the_rollout_hide_the_same_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    said = ["nothing to hide yet", *(f"the value is {value}" for value in [*SECRETS, PLAIN])]
    script = tmp_path / "replay.json"
    script.write_text(json.dumps({"responses": [{"text": text} for text in said]}))
    (tmp_path / "nbagent.toml").write_text(_config(script))

    agent = KernelAgent(shell=None, session_factory=lambda: Session(thread_name="same-set"))
    agent.frontend_override = "headless"
    shown: list[str] = []
    memory: list[str] = []
    try:
        session = await agent.ready()
        for n in range(len(said)):
            if n == 1:
                add_process_secret(LATE)  # after the first turn's events went through the cell
                monkeypatch.setenv(*LATE_ENV)
            turn = prepare(agent, "", f"turn {n}")
            assert turn is not None
            assert (await drive(agent, turn)).msg.type == "turn_completed"
            shown += turn.view.lines  # type: ignore[attr-defined]
            view = session._inspector.turn(session._thread.id)  # what %agent inspect turn shows
            assert view is not None
            memory.append(view.model_dump_json())
        thread_id = session._thread.id
    finally:
        await agent.close()

    threads = tmp_path / "home" / "threads"
    places = {
        "cell": "\n".join(shown),
        "rollout": next(threads.rglob(f"*{thread_id}*.jsonl")).read_text(),
        "inspect files": (threads / f"{thread_id}.turns.ndjson").read_text(),
        "inspect view": "\n".join(memory),
    }
    assert "the value is" in places["inspect files"], "the turns' messages are not in the inspect file"
    for where, text in places.items():
        leaked = [secret for secret in SECRETS if secret in text]
        assert not leaked, f"{where} shows {leaked}"
        assert PLAIN in text, f"{where} hides a plain setting the others show"
    for where in ("cell", "rollout", "inspect files"):
        hidden = places[where].count("the value is [redacted]")
        assert hidden == len(SECRETS), f"{where} hid {hidden} of {len(SECRETS)} secrets"


@pytest.mark.timeout(60)
async def test_a_secret_cut_by_a_timeline_detail_leaves_no_part_of_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A timeline entry's detail is cut to a few words; a secret across the cut must not leave
    its head behind (the cut comes after the redaction, not before it)."""
    secret = ENV["MY_SERVICE_TOKEN"]
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MY_SERVICE_TOKEN", secret)
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "replay.json"
    text = "x" * (DETAIL_CHARS - 8) + " " + secret + " and the rest"  # the cut falls inside the secret
    script.write_text(json.dumps({"responses": [{"text": text}]}))
    async with Session(model=f"replay:{script}") as session:
        await session.run("go")
        view = session._inspector.turn(session._thread.id)
        assert view is not None
        files = (tmp_path / "home" / "threads" / f"{session._thread.id}.turns.ndjson").read_text()
    for where, shown in {"inspect view": view.model_dump_json(), "inspect file": files}.items():
        assert "x" * (DETAIL_CHARS - 8) in shown, f"{where} lost the message"
        assert secret[:6] not in shown, f"{where} shows the head of a secret"
