"""Real kernels for the notebook tests: the replay model, the demo MCP server, bounded waits."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.notebook.harness import Kernel, demo_config, script


@pytest.fixture
def make_kernel(tmp_path: Path) -> Iterator[Callable[..., tuple[Kernel, Path]]]:
    """``make(*responses, extra="", env={})``: a kernel with ``%load_ext nbagent`` done; returns
    it and the demo server's execution record."""
    kernels: list[Kernel] = []

    def make(*responses: dict[str, Any], extra: str = "", env: dict[str, str] | None = None) -> tuple[Kernel, Path]:
        record = tmp_path / "record.jsonl"
        demo_config(tmp_path, script(tmp_path / "replay.json", *responses), record, extra=extra)
        kernel = Kernel(tmp_path, env={"NBAGENT_HOME": str(tmp_path / "home"), **(env or {})})
        kernels.append(kernel)
        reply = kernel.execute("%load_ext nbagent")
        assert reply["content"]["status"] == "ok"
        return kernel, record

    yield make
    for kernel in kernels:
        kernel.close()
