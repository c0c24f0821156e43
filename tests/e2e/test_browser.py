"""Browser end-to-end: JupyterLab + the nbagent extension + a real kernel, a real MCP server and
the replay model, driven in Debian's headless chromium by ``ui-tests/e2e.mjs`` (playwright-core).

Approve on the real panels writes a cell right below the agent cell (with provenance, marked;
the notebook is left dirty and the user's save writes it to disk); Deny writes nothing. Screenshots go to ``test-artifacts/e2e/`` (git-ignored).

One JupyterLab (``lab`` in conftest.py) serves every browser test without real-time collaboration (it serves Notebook 7 too): each test has its own folder
under the server's root, with its own ``nbagent.toml`` (a kernel starts in its notebook's folder).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.jupyter import BUILT_EXTENSION, REPO, JupyterLab, code_cell

UI_TESTS = REPO / "ui-tests"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = REPO / "test-artifacts" / "e2e"

EXPECT_SOURCE = "answer = 6 * 7  # written by nbagent in the browser test\nanswer"
DENIED_SOURCE = "denied_write = True"
TURN1_TEXT = "Turn one done: note written, cell inserted."
TURN2_TEXT = "Understood: nothing was written."
MCP_TOOL = "mcp__demo__write_note"


def _missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not Path(CHROMIUM).exists():
        return f"no chromium at {CHROMIUM} (apt-get install chromium)"
    if not (UI_TESTS / "node_modules" / "playwright-core").is_dir():
        return "ui-tests has no node_modules (npm ci --prefix ui-tests)"
    if not (BUILT_EXTENSION / "package.json").is_file():
        return "the extension is not built (make labextension)"
    if importlib.util.find_spec("nbagent.notebook.magics") is None:
        return "the notebook magics are not in this tree yet"
    return None


pytestmark = [pytest.mark.timeout(420), pytest.mark.skipif(_missing() is not None, reason=str(_missing()))]


def _folder(lab: JupyterLab, name: str) -> Path:
    """This test's own folder under the shared server's root."""
    folder = lab.root / name
    folder.mkdir()
    return folder


def run_script(script: str, env: dict[str, str], lab: JupyterLab, *, timeout: float) -> dict:
    """Run one ui-tests script; its last JSON line (the result), or fail with its steps and the
    server log."""
    try:
        proc = subprocess.run(["node", script], cwd=UI_TESTS, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the browser script hung:\n{exc.stdout}\n--- server log ---\n{lab.log_tail()}")
    steps = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    result = steps[-1] if steps and steps[-1].get("step") == "result" else {}
    assert proc.returncode == 0 and result.get("ok"), (
        f"browser test failed: {result.get('error') or proc.stderr}\nsteps: {steps}\n--- server log ---\n{lab.log_tail()}"
    )
    return result


def _write_fixture(root: Path, work: Path) -> dict[str, Path]:
    turn1 = work / "turn1.json"
    turn1.write_text(json.dumps({"responses": [
        {"text": "I will write the note first.",
         "tool_calls": [{"name": MCP_TOOL, "arguments": {"name": "e2e", "text": "written from the browser test"}}]},
        {"tool_calls": [{"name": "insert_cell", "arguments": {"source": EXPECT_SOURCE}}]},
        {"text": TURN1_TEXT},
    ]}))
    turn2 = work / "turn2.json"
    turn2.write_text(json.dumps({"responses": [
        {"tool_calls": [{"name": "insert_cell", "arguments": {"source": DENIED_SOURCE}}]},
        {"text": TURN2_TEXT},
    ]}))
    record = work / "record.jsonl"
    (root / "nbagent.toml").write_text(
        f'model = "replay:{turn1}"\napproval_policy = "on-request"\n\n'
        "[mcp_servers.demo]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f'args = ["-m", "nbagent.examples.demo_server", "--dir", {json.dumps(str(work / "notes"))}, '
        f'"--record", {json.dumps(str(record))}]\n'
        f"sandbox_workspace_write = {{ writable_roots = [{json.dumps(str(work))}] }}\n"  # notes and record, outside the notebook's folder
    )
    # Cell 1 waits for the kernel's session and lists its tools (the notebook tools included).
    wire = (
        "from nbagent.notebook.extension import get_agent\n"
        "_session = await get_agent().ready()\n"
        "print('tools:', ', '.join(sorted(s.name for s in _session.snapshot().tools)))"
    )
    notebook = root / "e2e.ipynb"
    notebook.write_text(json.dumps({
        "cells": [
            code_cell("%load_ext nbagent"),
            code_cell(wire),
            code_cell(f"%%agent -m replay:{turn1} --policy on-request\nWrite the note, then add a cell that computes the answer."),
            code_cell(f"%%agent -m replay:{turn2} --policy on-request\nAdd another cell."),
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }, indent=1))
    return {"notebook": notebook, "record": record}


def test_approve_writes_a_marked_saved_cell_and_deny_writes_nothing(tmp_path: Path, lab: JupyterLab) -> None:
    root, work = _folder(lab, "approve"), tmp_path / "work"
    work.mkdir()
    paths = _write_fixture(root, work)
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    env = dict(os.environ)
    env.update(
        NBAGENT_E2E_URL=lab.url, NBAGENT_E2E_TOKEN=lab.token, NBAGENT_E2E_NOTEBOOK="approve/e2e.ipynb",
        NBAGENT_E2E_NOTEBOOK_FILE=str(paths["notebook"]), NBAGENT_E2E_ARTIFACTS=str(ARTIFACTS),
        NBAGENT_E2E_EXPECT_SOURCE=EXPECT_SOURCE, NBAGENT_E2E_DENIED_SOURCE=DENIED_SOURCE,
        NBAGENT_E2E_MCP_TOOL=MCP_TOOL, NBAGENT_E2E_TURN1_TEXT=TURN1_TEXT, NBAGENT_E2E_TURN2_TEXT=TURN2_TEXT,
        CHROMIUM=CHROMIUM,
    )
    result = run_script("e2e.mjs", env, lab, timeout=360)
    # Server-side evidence: the approved MCP call ran exactly once.
    record = [json.loads(line) for line in paths["record"].read_text().splitlines()]
    assert [r["tool"] for r in record] == ["write_note"]
    # The file on disk has the approved cell with provenance, and not the denied one.
    saved = json.loads(paths["notebook"].read_text())
    written = [c for c in saved["cells"] if "".join(c["source"]) == EXPECT_SOURCE]
    assert len(written) == 1
    assert written[0]["metadata"]["nbagent"] == result["provenance"]
    assert set(result["provenance"]) == {"thread_id", "turn_id", "call_id"}
    assert result["provenance"]["thread_id"] in saved["metadata"]["nbagent"]["threads"]
    assert not any(DENIED_SOURCE in "".join(c["source"]) for c in saved["cells"])
    assert sorted(p.name for p in ARTIFACTS.glob("*.png"))  # screenshots were taken


NB7_CELL = """\
from nbagent.notebook.bridge import get_bridge
from nbagent.protocol.bridge import InsertCellParams, Provenance
_bridge = get_bridge()
_hello = await _bridge.connect()
_nb = await _bridge.read_notebook()
_new = await _bridge.insert_cell(InsertCellParams(source="inserted_in_notebook7 = True",
    provenance=Provenance(thread_id="thread_nb7", turn_id="turn_nb7", call_id="call_nb7")))
print("BRIDGE", _hello.app, _nb.path, len(_nb.cells), _new.index)"""


def test_the_extension_serves_the_bridge_in_notebook_7(lab: JupyterLab) -> None:
    notebook = _folder(lab, "nb7") / "nb7.ipynb"
    notebook.write_text(json.dumps({
        "cells": [code_cell(NB7_CELL)],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }))
    env = dict(os.environ, NBAGENT_E2E_URL=lab.url, NBAGENT_E2E_TOKEN=lab.token, NBAGENT_E2E_NOTEBOOK="nb7/nb7.ipynb",
               NBAGENT_E2E_ARTIFACTS=str(ARTIFACTS.parent / "notebook7"), CHROMIUM=CHROMIUM)
    proc = subprocess.run(["node", "notebook7.mjs"], cwd=UI_TESTS, env=env, capture_output=True, text=True, timeout=240)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    result = lines[-1] if lines else {}
    assert proc.returncode == 0 and result.get("ok"), f"{result.get('error') or proc.stderr}\n{lab.log_tail()}"
    # Shift+Enter ran the cell and added an empty one below; the insert appended after both.
    assert result["line"] == "BRIDGE Jupyter Notebook nb7/nb7.ipynb 2 2"
    assert result["dirty"] is True  # the write was not saved under the user's hands
    saved = json.loads(notebook.read_text())
    inserted = [c for c in saved["cells"] if "".join(c["source"]) == "inserted_in_notebook7 = True"]
    assert len(inserted) == 1
    assert inserted[0]["metadata"]["nbagent"] == {"thread_id": "thread_nb7", "turn_id": "turn_nb7", "call_id": "call_nb7"}
    assert saved["metadata"]["nbagent"]["threads"] == ["thread_nb7"]


# -- typing, key by key, in JupyterLab and Notebook 7 ------------------------------------------

TYPING_TURNS = [
    {"cell": 2, "mode": "wait", "source": "%%agent --wait", "reason": "please do not write anything today",
     "arguments": '{"name": "typed-wait", "text": "every key arrived"}',
     "form": {"title": "Baseline run", "owner_email": "you@example.com", "runs": 12, "learning_rate": 0.125,
              "public": True, "optimizer": "sgd", "tags": ["nlp", "rl"], "start": "2025-03-04"},
     "done": "Typing turn done in the waiting cell."},
    {"cell": 3, "mode": "background", "source": "%%agent", "reason": "not in the background either, thanks",
     "arguments": '{"name": "typed-bg", "text": "typed while the kernel was idle"}',
     "form": {"title": "Second run", "owner_email": "ada@example.org", "runs": 7, "learning_rate": 0.5,
              "public": True, "optimizer": "adamw", "tags": ["vision", "nlp"], "start": "2026-12-01"},
     "done": "Typing turn done in the background cell."},
]


def _typing_steps(t: dict) -> list[dict]:
    """The fake model's replies: a write to deny, a write to edit and approve, the form."""
    return [
        {"text": "First I would write a note.",
         "tool_calls": [{"name": MCP_TOOL, "arguments": {"name": "unwanted", "text": "should not be written"}}]},
        {"tool_calls": [{"name": MCP_TOOL, "arguments": {"name": "draft", "text": "placeholder"}}]},
        {"tool_calls": [{"name": "mcp__demo__log_experiment", "arguments": {"name": t["mode"]}}]},
        {"text": t["done"]},
    ]


def _typing_fixture(root: Path, work: Path, openai_server: object) -> dict[str, Path]:
    record = work / "record.jsonl"
    (root / "nbagent.toml").write_text(
        'model = "fake-model"\nmodel_provider = "fake"\napproval_policy = "on-request"\n\n'
        f'[model_providers.fake]\nbase_url = "{openai_server.base_url}"\nenv_key = "NBAGENT_E2E_FAKE_KEY"\n\n'  # type: ignore[attr-defined]
        "[mcp_servers.demo]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f'args = ["-m", "nbagent.examples.demo_server", "--dir", {json.dumps(str(work / "notes"))}, '
        f'"--record", {json.dumps(str(record))}]\n'
        f"sandbox_workspace_write = {{ writable_roots = [{json.dumps(str(work))}] }}\n"  # notes and record, outside the notebook's folder
        '[mcp_servers.demo.tools.log_experiment]\napproval_mode = "approve"\n'
    )
    wire = "from nbagent.notebook.extension import get_agent\n_session = await get_agent().ready()\nprint('tools:', len(_session.snapshot().tools))"
    cells = [code_cell("%load_ext nbagent"), code_cell(wire)]
    cells += [code_cell(f"{t['source']}\nWrite a note, then log an experiment ({t['mode']}).") for t in TYPING_TURNS]
    notebook = root / "typing.ipynb"
    notebook.write_text(json.dumps({
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }, indent=1))
    return {"notebook": notebook, "record": record}


def _told(requests: list[dict]) -> list[str]:
    """Each tool result the model was sent, once, in the order it was first sent."""
    seen: dict[str, str] = {}
    for body in requests:
        for item in body.get("input") or []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                output = item["output"]
                seen.setdefault(item["call_id"], output if isinstance(output, str) else json.dumps(output))
    return list(seen.values())


@pytest.mark.timeout(900)
@pytest.mark.parametrize("ui", ["lab", "notebook7"])
def test_what_a_person_types_key_by_key_reaches_the_server_and_the_model(
    tmp_path: Path, openai_server, lab: JupyterLab, ui: str
) -> None:
    """Both kinds of cell, one after the other in one notebook: a ``--wait`` cell, then a
    background one."""
    root, work = _folder(lab, f"typing-{ui}"), tmp_path / "work"
    work.mkdir()
    paths = _typing_fixture(root, work, openai_server)
    openai_server.script([step for t in TYPING_TURNS for step in _typing_steps(t)])
    artifacts = ARTIFACTS.parent / f"typing-{ui}"
    shutil.rmtree(artifacts, ignore_errors=True)
    env = dict(os.environ, NBAGENT_E2E_URL=lab.url, NBAGENT_E2E_TOKEN=lab.token, NBAGENT_E2E_NOTEBOOK=f"typing-{ui}/typing.ipynb",
               NBAGENT_E2E_UI=ui, NBAGENT_E2E_PLAN=json.dumps({"turns": TYPING_TURNS}),
               NBAGENT_E2E_ARTIFACTS=str(artifacts), CHROMIUM=CHROMIUM)
    result = run_script("typing.mjs", env, lab, timeout=840)
    ran = [json.loads(line) for line in paths["record"].read_text().splitlines()]
    told = _told(openai_server.requests)
    assert len(result["turns"]) == len(TYPING_TURNS) and len(ran) == 2 * len(TYPING_TURNS) and len(told) == 3 * len(TYPING_TURNS)
    for n, (t, seen) in enumerate(zip(TYPING_TURNS, result["turns"], strict=True)):
        mode = t["mode"]
        assert seen["mode"] == mode
        assert seen["reasonShown"] == t["reason"] and json.loads(seen["argumentsShown"]) == json.loads(t["arguments"])
        # The kernel indicator says idle once the cell ended (a --wait cell: once its turn ended).
        assert seen["statusAfter"] == "idle"
        # What the MCP server ran: exactly the typed arguments and the typed form, nothing denied.
        assert [(r["tool"], r["arguments"], r.get("content")) for r in ran[2 * n : 2 * n + 2]] == [
            ("write_note", json.loads(t["arguments"]), None), ("log_experiment", {"name": mode}, t["form"]),
        ]
        # What the model was told: the whole reason, the typed write, the typed answers.
        denied, written, logged = told[3 * n : 3 * n + 3]
        assert t["reason"] in denied, denied
        assert f"wrote {json.loads(t['arguments'])['name']}.md" in written, written
        assert json.dumps(t["form"]["owner_email"]) in logged and json.dumps(t["form"]["title"]) in logged, logged
        assert len(list(artifacts.glob(f"*-{ui}-{mode}-*.png"))) >= 7
