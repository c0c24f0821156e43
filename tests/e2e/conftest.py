"""The JupyterLab the browser tests share: one server for the package, since each start costs
seconds of the CI budget; each test works in its own folder under its root."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.jupyter import JupyterLab


@pytest.fixture(scope="package")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    base = tmp_path_factory.mktemp("jupyterlab")
    root = base / "root"
    root.mkdir()
    env = {"NBAGENT_HOME": str(base / "home"), "NBAGENT_E2E_FAKE_KEY": "sk-e2e-typing"}
    with JupyterLab(root, base, env) as server:
        yield server
