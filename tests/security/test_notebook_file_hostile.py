"""A notebook file someone sent, read by the notebook tools and the resume offer: bounded, and
bad shapes give the model an error naming the file instead of raising out of the tool.

- ``read_notebook`` from the saved file (no extension) on malformed JSON or a malformed shape is
  a tool error naming the file; a file over the size cap is refused naming the file and the cap,
  without being read whole.
- The thread ids of ``metadata.nbagent.threads`` are a list of strings or nothing, and only the
  latest ``MAX_NOTEBOOK_THREADS`` of them are considered, by the tool and by the resume offer.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from nbagent.notebook.resume_offer import resumable
from nbagent.protocol import CallInfo
from nbagent.protocol.bridge import MAX_NOTEBOOK_THREADS
from nbagent.protocol.rollout import ThreadMeta
from nbagent.store import ThreadStore
from nbagent.tools.notebook import MAX_NOTEBOOK_BYTES, NotebookTools

CALL = CallInfo(thread_id="thread_0123456789abcdef0123", turn_id="turn_1", call_id="call_1")


class NoExtension:
    async def available(self) -> bool:
        return False

    def page_gone(self) -> None:
        return None


def _cell(**fields: Any) -> dict[str, Any]:
    return {"id": "c1", "cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": [], **fields}


def _notebook(cells: Any = None, metadata: Any = None) -> str:
    return json.dumps({"cells": [_cell()] if cells is None else cells, "metadata": {} if metadata is None else metadata,
                       "nbformat": 4, "nbformat_minor": 5})


MALFORMED = {
    "not json": "{\"cells\": [",
    "a json list": "[1, 2, 3]",
    "cells not a list": _notebook(cells={"c1": _cell()}),
    "a cell that is a string": _notebook(cells=["x = 1"]),
    "an unknown cell type": _notebook(cells=[_cell(cell_type="sql")]),
    "source a number": _notebook(cells=[_cell(source=42)]),
    "outputs a string": _notebook(cells=[_cell(outputs="1\n")]),
    "an output that is a list": _notebook(cells=[_cell(outputs=[["stream"]])]),
    "stream text of numbers": _notebook(cells=[_cell(outputs=[{"output_type": "stream", "text": [1, 2]}])]),
    "metadata a list": _notebook(metadata=["nbagent"]),
    "cell metadata a string": _notebook(cells=[_cell(metadata="nbagent")]),
    "not utf-8": b"\xff\xfe{\"cells\": []}",
}


async def _read(path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    tools = NotebookTools(NoExtension(), shell=None)
    spec = next(s for s in tools.list_tools() if s.name == "read_notebook")
    return await tools.call_tool(spec, {}, CALL)


@pytest.mark.parametrize("case", list(MALFORMED), ids=list(MALFORMED))
async def test_a_malformed_notebook_is_a_tool_error_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    path = tmp_path / "sent.ipynb"
    content = MALFORMED[case]
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    result = await _read(path, monkeypatch)
    text = result.content[0].text
    assert result.is_error and str(path) in text and "Traceback" not in text, text


async def test_a_notebook_over_the_cap_is_refused_naming_file_and_cap_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "huge.ipynb"
    path.write_text('{"cells": [{"cell_type": "code", "source": "')
    os.truncate(path, MAX_NOTEBOOK_BYTES + 1)  # sparse: no disk, but a read would hold it all
    result = await _read(path, monkeypatch)
    text = result.content[0].text
    assert result.is_error, text
    assert str(path) in text and f"{MAX_NOTEBOOK_BYTES:,}" in text, text


ONE = "thread_0123456789abcdef0123"


@pytest.mark.parametrize("nbagent", [{"threads": ONE}, {"threads": {ONE: 1}}, {"threads": 7}, ONE, [ONE]])
async def test_thread_ids_that_are_not_a_list_are_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nbagent: Any
) -> None:
    path = tmp_path / "sent.ipynb"
    path.write_text(_notebook(metadata={"nbagent": nbagent}))
    result = await _read(path, monkeypatch)
    assert not result.is_error and result.structured["threads"] == []


def _ids(n: int, start: int = 0) -> list[str]:
    return [f"thread_{i:020x}" for i in range(start, start + n)]


async def test_read_notebook_keeps_only_the_latest_thread_ids(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    many = _ids(200_000)
    path = tmp_path / "sent.ipynb"
    path.write_text(_notebook(metadata={"nbagent": {"threads": [*many, 5, many[-1]]}}))
    result = await _read(path, monkeypatch)
    assert result.structured["threads"] == many[-MAX_NOTEBOOK_THREADS:]


def test_the_resume_offer_considers_only_the_latest_thread_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """200,000 ids in a notebook's metadata: the kernel looks up only the latest ones (it looked
    up every one, ~40 s of a busy kernel), so the newest local threads are still offered."""
    home = tmp_path / "home"
    monkeypatch.setenv("NBAGENT_HOME", str(home))
    monkeypatch.chdir(tmp_path)
    local = _ids(MAX_NOTEBOOK_THREADS + 20, start=10**6)
    with ThreadStore(home) as store:
        for thread_id in local:
            store.create(ThreadMeta(thread_id=thread_id)).close()
    offered = resumable(json.dumps([*_ids(200_000), *local, "x", local[0]]))
    assert list(offered) == local[-MAX_NOTEBOOK_THREADS:]
    assert resumable(json.dumps({"threads": local})) == []
