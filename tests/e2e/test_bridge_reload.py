"""Browser end-to-end: a page reload or a closed tab never stalls the agent, the reloaded page
draws each provenance badge as the kernel confirms it without a hover, and the active cell's
toolbar leaves the badge and its Undo clickable. Real JupyterLab, kernel and
extension in headless Chromium (``ui-tests/reload.mjs``); the model is the local
OpenAI-compatible test server, so what it was told is read from the requests it received.

After the browser is gone (no page left), a turn run through the kernel's own channels says
the write could not be made, within a bound well under the kernel's 30 s reply timeout; the next
turn's write is refused saying no page of the notebook is open, naming its saved file."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

from jupyter_client import BlockingKernelClient

from tests.e2e.jupyter import JupyterLab, agent_notebook, code_cell
from tests.e2e.test_browser import ARTIFACTS, CHROMIUM, _folder, _told, pytestmark, run_script
from tests.waiting import wait_for

__all__ = ["pytestmark"]  # the browser tests' skip conditions

BOUND_MS = 10_000
"""How long the reloaded page may take to show the next write: a condition's timeout, well
under the 30 s a request waited for a page that was gone."""
PLAN = {
    "turn1": "%%agent\nAdd the first cell.", "turn2": "%%agent\nAdd the second cell.",
    "first": "first = 1", "second": "second = 2", "forged": "forged = True", "bound_ms": BOUND_MS,
}
FORGED = {"thread_id": "thread_0123456789abcdef0123", "turn_id": "turn_forged", "call_id": "call_forged"}


def _turn(source: str, done: str) -> list[dict]:
    return [{"tool_calls": [{"name": "insert_cell", "arguments": {"source": source}}]}, {"text": done}]


def _kernel_client(lab: JupyterLab, path: str) -> BlockingKernelClient:
    """A client of the kernel behind ``path``'s session, through its connection file."""
    with urllib.request.urlopen(f"{lab.url}/api/sessions?token={lab.token}", timeout=10) as response:
        sessions = json.load(response)
    kernel_id = next(s["kernel"]["id"] for s in sessions if s["path"] == path)
    client = BlockingKernelClient(connection_file=str(lab.base / "runtime" / f"kernel-{kernel_id}.json"))
    client.load_connection_file()
    client.start_channels()
    return client


def test_after_a_reload_the_next_write_is_prompt_and_with_no_page_left_it_fails_at_once(
    tmp_path: Path, openai_server, lab: JupyterLab
) -> None:
    agent_notebook(_folder(lab, "reload") / "reload.ipynb", openai_server.base_url, "full-auto", [
        code_cell(PLAN["turn1"]), code_cell(PLAN["turn2"]), {**code_cell(PLAN["forged"]), "metadata": {"nbagent": FORGED}}])
    openai_server.script(_turn(PLAN["first"], "First done.") + _turn(PLAN["second"], "Second done.")
                         + _turn("third = 3", "Third not written.") + _turn("fourth = 4", "Fourth not written."))
    artifacts = ARTIFACTS.parent / "reload"
    env = dict(os.environ, NBAGENT_E2E_URL=lab.url, NBAGENT_E2E_TOKEN=lab.token, NBAGENT_E2E_NOTEBOOK="reload/reload.ipynb",
               NBAGENT_E2E_PLAN=json.dumps(PLAN), NBAGENT_E2E_ARTIFACTS=str(artifacts), CHROMIUM=CHROMIUM)
    result = run_script("reload.mjs", env, lab, timeout=300)

    # Reloaded, with no hover: the agent's cell is drawn confirmed, the forged one refused.
    assert [(c["source"], c["claim"]) for c in result["loaded"]] == [(PLAN["first"], "confirmed"), (PLAN["forged"], "refused")]
    first, forged = (c["title"] for c in result["loaded"])
    assert first.startswith("Written by nbagent in this kernel"), first
    assert forged.startswith("Not confirmed: ") and "call_forged" in forged, forged
    # The write after the reload was found within the bound (the script waits at most BOUND_MS).
    assert result["secondAfterMs"] < BOUND_MS
    assert result["confirmedTitle"].startswith("Written by nbagent in this kernel"), result["confirmedTitle"]
    # Forged metadata: no Undo, and the tooltip does not say nbagent wrote the cell.
    assert result["forgedUndo"] == 0
    for title in (result["forgedTitleBefore"], result["forgedTitle"]):
        assert not title.startswith("Written by nbagent") and title.startswith("Not confirmed"), title
    assert "call_forged" in result["forgedTitle"]

    # The browser is gone: a turn's write fails at once, and the model is told why.
    client = _kernel_client(lab, "reload/reload.ipynb")
    try:
        client.execute("%%agent --wait\nAdd the third cell.")
        wait_for(lambda: len(_told(openai_server.requests)) == 3, "the model to be told of the third write", BOUND_MS / 1000)
        client.execute("%%agent --wait\nAdd the fourth cell.")
        wait_for(lambda: len(_told(openai_server.requests)) == 4, "the model to be told of the fourth write", BOUND_MS / 1000)
    finally:
        client.stop_channels()
    third, fourth = _told(openai_server.requests)[2:]
    assert "no page showing the notebook took insert_cell" in third and "is not open in a browser tab" in third, third
    # While that "no page" verdict stands, the next write says so too, not that the extension is missing.
    assert "no open page of this notebook was seen" in fourth and "not active" not in fourth, fourth
    assert str(lab.root / "reload" / "reload.ipynb") in fourth, fourth
