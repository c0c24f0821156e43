from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty ``$NBAGENT_HOME`` and a cwd with no config, so no user file leaks in."""
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("NBAGENT_MODEL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path / "home"


@pytest.fixture
def script(tmp_path: Path) -> Callable[..., str]:
    """Write a replay script; returns the ``replay:PATH`` model string."""
    counter = iter(range(1000))

    def write(*responses: dict[str, Any]) -> str:
        path = tmp_path / f"script{next(counter)}.json"
        path.write_text(json.dumps({"responses": list(responses)}))
        return f"replay:{path}"

    return write
