"""Notebook metadata is untrusted: the "Resume" offer runs no code from it.

A crafted notebook lists thread "ids" such as ``x\\nimport pathlib; pathlib.Path(MARKER)...``.
Only well-formed ids of threads in the local store are offered, and an id reaches the kernel
as data. Proven in a real kernel (the exact expression the labextension sends) and in
JupyterLab with the built extension, where the offer is clicked as a user would.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest

from nbagent import Session
from tests.kernels import running_kernel
from tests.security.untrusted_fixtures import replay


def hostile_ids(marker: Path) -> list[str]:
    code = f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran')"
    return [
        f"x\n{code}",
        f"thread_0123456789abcdef0123\n{code}",
        f"thread_{{__import__('pathlib').Path({str(marker)!r}).write_text('ran')}}",
        f"$({code})",
        "thread_0123456789abcdef0123 ; " + code,
        "thread_ffffffffffffffffffff",  # well formed, but no such thread here
        "THREAD_0123456789ABCDEF0123",
        "../../etc/passwd",
        42,
        None,
    ]  # type: ignore[list-item]


def real_thread(tmp_path: Path) -> str:
    """A thread in ``$NBAGENT_HOME``, made by one real turn of the replay model."""

    async def one_turn() -> str:
        async with Session(model=replay(tmp_path / "hello.json", {"text": "hello"})) as session:
            return (await session.run("hi")).thread_id

    return asyncio.run(one_turn())


def offer_expression(ids: list) -> str:
    """What labextension/src/index.ts ``knownThreads`` evaluates (after its own format filter)."""
    return (
        "__import__('nbagent.notebook.resume_offer', fromlist=['resumable']).resumable("
        + json.dumps(json.dumps(ids))
        + ")"
    )


def test_the_kernel_offers_only_well_formed_ids_of_local_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, marker = tmp_path / "home", tmp_path / "MARKER"
    monkeypatch.setenv("NBAGENT_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    real = real_thread(tmp_path)
    ids = [*hostile_ids(marker), real, real]
    with running_kernel() as kc:
        msg_id = kc.execute("", silent=True, store_history=False, user_expressions={"nbagent": offer_expression(ids)})
        reply = kc.get_shell_msg(timeout=60)
        while reply["parent_header"].get("msg_id") != msg_id:  # kernel_info replies from the start
            reply = kc.get_shell_msg(timeout=60)
        result = reply["content"]["user_expressions"]["nbagent"]
    assert result["status"] == "ok", result
    assert json.loads(result["data"]["text/plain"]) == [real]
    assert not marker.exists()


# -- the browser ----------------------------------------------------------------------------------

def _browser_missing() -> str | None:
    from tests.e2e.test_browser import _missing  # node, chromium, playwright, the built extension

    return _missing()


@pytest.mark.timeout(420)
@pytest.mark.skipif(_browser_missing() is not None, reason=str(_browser_missing()))
def test_a_crafted_notebook_gets_no_code_run_from_the_resume_offer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.e2e.jupyter import JupyterLab
    from tests.e2e.test_browser import CHROMIUM, UI_TESTS

    root, work = tmp_path / "root", tmp_path / "work"
    root.mkdir()
    work.mkdir()
    home, marker = work / "home", tmp_path / "MARKER"
    monkeypatch.setenv("NBAGENT_HOME", str(home))
    monkeypatch.chdir(work)
    real = real_thread(tmp_path)
    hostile = hostile_ids(marker)
    (root / "resume.ipynb").write_text(json.dumps({
        "cells": [{"cell_type": "markdown", "metadata": {}, "source": "A notebook someone sent you."}],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "nbagent": {"threads": [real, *hostile]},  # the hostile ones are the latest: offered first
        },
        "nbformat": 4, "nbformat_minor": 5,
    }))  # fmt: skip
    artifacts = tmp_path / "artifacts"
    with JupyterLab(root, work, {"NBAGENT_HOME": str(home)}) as lab:
        env = dict(os.environ, NBAGENT_E2E_URL=lab.url, NBAGENT_E2E_TOKEN=lab.token, NBAGENT_E2E_NOTEBOOK="resume.ipynb",
                   NBAGENT_E2E_ARTIFACTS=str(artifacts), NBAGENT_E2E_HOSTILE_ID=hostile[0],
                   NBAGENT_E2E_REAL_ID=real, CHROMIUM=CHROMIUM)  # fmt: skip
        try:
            proc = subprocess.run(["node", "resume_offer.mjs"], cwd=UI_TESTS, env=env, capture_output=True, text=True,
                                  timeout=360)  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"the browser script hung:\n{exc.stdout}\n--- server log ---\n{lab.log_tail()}")
        lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        result = lines[-1] if lines else {}
        assert proc.returncode == 0 and result.get("ok"), f"{result.get('error') or proc.stderr}\n{lab.log_tail()}"
    assert not marker.exists(), "code from the notebook's metadata ran in the kernel"
    assert result["offered"] == [f"Resume {real[:16]}…"]
    assert not [s for s in result["sources"] if "%agent resume" in s and real not in s]
    assert f"%load_ext nbagent\n%agent resume {real}" in result["sources"]
