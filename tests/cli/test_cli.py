"""The ``nbagent`` command as a user runs it: a real process, real files, JSON events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.proc import events_of, nbagent, one_line_error

REQUIRED = {"type", "seq", "thread_id", "turn_id"}


def test_run_json_prints_events_with_ids_and_seq(tmp_path: Path) -> None:
    proc = nbagent("run", "-m", "replay:tests/fixtures/replay_hello.json", "--json", "say hello", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    events = events_of(proc.stdout)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "session_configured" and "turn_started" in kinds and kinds[-1] == "shutdown_complete"
    assert all(REQUIRED <= e.keys() for e in events)
    seqs = [e["seq"] for e in events]
    assert seqs == sorted(set(seqs))
    configured = events[0]
    assert configured["scripted"] is True and "scripted" in configured["model_label"]
    turn = [e for e in events if e["type"] in ("turn_started", "agent_message", "turn_completed")]
    assert len({e["turn_id"] for e in turn}) == 1 and turn[0]["turn_id"]
    message = next(e for e in events if e["type"] == "agent_message")
    assert message["text"].startswith("Hello! I am a scripted replay model")


def test_threads_resume_and_index_rebuild(tmp_path: Path) -> None:
    first = nbagent("run", "-m", "replay:tests/fixtures/replay_hello.json", "--json", "one", home=tmp_path)
    thread_id = events_of(first.stdout)[0]["thread_id"]
    listed = nbagent("threads", "--json", home=tmp_path)
    assert [t["id"] for t in json.loads(listed.stdout)] == [thread_id]
    again = nbagent("resume", thread_id, "-m", "replay:tests/fixtures/replay_hello.json", "--json", "two", home=tmp_path)
    assert again.returncode == 0, again.stderr
    assert {e["thread_id"] for e in events_of(again.stdout)} == {thread_id}
    (tmp_path / "state.sqlite").unlink()
    rebuilt = nbagent("index", "rebuild", home=tmp_path)
    assert rebuilt.returncode == 0 and "1 rollout" in rebuilt.stdout
    row = json.loads(nbagent("threads", "--json", home=tmp_path).stdout)[0]
    assert row["id"] == thread_id and row["turns"] == 2


def test_a_failed_turn_exits_non_zero(tmp_path: Path) -> None:
    script = tmp_path / "empty.json"
    script.write_text('{"responses": []}')
    proc = nbagent("run", "-m", f"replay:{script}", "say", home=tmp_path)
    assert proc.returncode == 1
    assert "error:" in proc.stderr and "empty.json" in proc.stderr


def test_no_model_says_what_to_set(tmp_path: Path) -> None:
    proc = nbagent("run", "hello", home=tmp_path, cwd=tmp_path)
    assert proc.returncode == 2
    assert "OPENAI_API_KEY" in proc.stderr and "replay:FILE" in proc.stderr


@pytest.mark.parametrize("argv", [["run"], ["frobnicate"], ["run", "--policy", "sometimes", "x"]])
def test_bad_arguments_print_one_line_pointing_at_help_not_a_traceback(tmp_path: Path, argv: list[str]) -> None:
    proc = nbagent(*argv, home=tmp_path)
    assert proc.returncode == 2 and "--help" in one_line_error(proc)
