"""``nbagent run --json | head -1``: a reader that leaves early is no error of the run's."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.proc import ROOT, nbagent, start_nbagent


def test_a_reader_that_leaves_early_gets_no_traceback_and_the_turn_is_still_recorded(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run = start_nbagent("run", "-m", f"replay:{ROOT / 'tests/fixtures/replay_hello.json'}", "--json", "say hello",
                        home=home, cwd=tmp_path)  # fmt: skip
    assert run.stdout is not None and run.stderr is not None
    first = json.loads(run.stdout.readline())
    run.stdout.close()  # as `head -1` does once it has its line
    stderr = run.stderr.read()
    assert run.wait(timeout=60) == 0, stderr
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr

    [thread] = json.loads(nbagent("threads", "--json", home=home, cwd=tmp_path).stdout)
    assert thread["id"] == first["thread_id"]
    script = tmp_path / "again.json"
    exported = nbagent("export", "replay", thread["id"], "-o", str(script), home=home, cwd=tmp_path)
    assert exported.returncode == 0, exported  # the model's whole reply was recorded
    assert json.loads(script.read_text()) == json.loads((ROOT / "tests/fixtures/replay_hello.json").read_text())
