"""Browser end-to-end with jupyter-collaboration: two pages on one notebook share one document.
The agent's approved insert_cell goes into that shared document while the second page's person
types key by key into another cell: both pages show the agent's cell once, and every key typed."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from collections.abc import Iterator

import pytest

from tests.e2e.jupyter import JupyterLab, agent_notebook, code_cell
from tests.e2e.test_browser import ARTIFACTS, CHROMIUM, _missing, run_script

pytestmark = [
    pytest.mark.timeout(420),
    pytest.mark.skipif(_missing() is not None, reason=str(_missing())),
    pytest.mark.skipif(importlib.util.find_spec("jupyter_server_ydoc") is None, reason="jupyter-collaboration is not installed"),
]

ORIGINAL = "typed_by_b = ''"
PLAN = {
    "agent_index": 1, "typing_index": 2, "original": ORIGINAL,
    "typed": "  # B types this, key by key, while the agent's cell goes in above it",
    "inserted": "written_by_agent = 42", "done": "Collaboration turn done.",
}


@pytest.fixture(scope="module")
def rtc_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    base = tmp_path_factory.mktemp("jupyterlab-rtc")
    root = base / "root"
    root.mkdir()
    with JupyterLab(root, base, {"NBAGENT_HOME": str(base / "home"), "NBAGENT_E2E_FAKE_KEY": "sk-e2e"}, rtc=True) as server:
        yield server


def test_two_pages_see_the_agents_cell_and_lose_no_typing(openai_server, rtc_lab: JupyterLab) -> None:
    root = rtc_lab.root / "collab"
    root.mkdir()
    agent_notebook(root / "collab.ipynb", openai_server.base_url, "on-request", [code_cell("%%agent\nAdd the answer."), code_cell(ORIGINAL)])
    openai_server.script([
        {"tool_calls": [{"name": "insert_cell", "arguments": {"source": PLAN["inserted"]}}]},
        {"text": PLAN["done"]},
    ])
    artifacts = ARTIFACTS.parent / "collaboration"
    shutil.rmtree(artifacts, ignore_errors=True)
    env = dict(os.environ, NBAGENT_E2E_URL=rtc_lab.url, NBAGENT_E2E_TOKEN=rtc_lab.token, NBAGENT_E2E_NOTEBOOK="collab/collab.ipynb",
               NBAGENT_E2E_PLAN=json.dumps(PLAN), NBAGENT_E2E_ARTIFACTS=str(artifacts), CHROMIUM=CHROMIUM)
    result = run_script("collaboration.mjs", env, rtc_lab, timeout=300)

    assert result["collaborative"] is True  # one shared document, not two copies
    assert result["insertedWhileTyping"] is True, result["insertMs"]
    typed = ORIGINAL + PLAN["typed"]
    for page in ("a", "b"):
        cells = result[page]
        assert cells.count(PLAN["inserted"]) == 1, cells  # once, though two pages got the request
        assert cells.index(PLAN["inserted"]) == PLAN["agent_index"] + 1, cells  # right below the agent cell
        assert cells[-1] == typed, cells  # every key B typed, after the agent's cell went in above it
    assert result["a"] == result["b"]
