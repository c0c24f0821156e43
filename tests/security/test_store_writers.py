"""One writer per thread across processes: a second ``nbagent resume`` of a thread that another
process is writing waits briefly, then is refused naming the holder's pid; it never interleaves
lines with the first nor marks the first's live turn aborted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from nbagent.protocol import TurnRecord
from nbagent.store import ThreadStore, read_rollout
from tests.security.store_env import SERVERS, nbagent, spawn
from tests.waiting import wait_for

REPLAY = "replay:" + str(Path(__file__).resolve().parents[1] / "fixtures" / "replay_hello.json")


def project(tmp_path: Path) -> Path:
    """A project folder whose config has the gate server (a tool that holds its call open)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "nbagent.toml").write_text(
        f"[mcp_servers.gate]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(SERVERS / 'gate.py'))}]\n"
    )
    return work


def new_thread(home: Path, work: Path) -> str:
    first = nbagent("run", "-m", REPLAY, "--json", "hello", home=home, cwd=work)
    assert first.returncode == 0, first.stderr
    return json.loads(first.stdout.splitlines()[0])["thread_id"]


def test_a_second_resume_is_refused_naming_the_writer_and_leaves_its_turn_alone(tmp_path: Path) -> None:
    home, work = tmp_path / "home", project(tmp_path)
    thread_id = new_thread(home, work)
    marker, release = work / "running", work / "release"  # in the workspace the gate server may write
    script = tmp_path / "hold.json"
    script.write_text(json.dumps({"responses": [
        {"tool_calls": [{"name": "mcp__gate__hold", "arguments": {"marker": str(marker), "release": str(release)}}]},
        {"text": "first is done"},
    ]}))
    first = spawn("resume", "-m", f"replay:{script}", "--policy", "full-auto", thread_id, "first", home=home, cwd=work)
    try:
        wait_for(lambda: marker.exists() or first.poll() is not None, "the first turn to be inside its tool call")
        assert first.poll() is None, first.communicate()
        second = nbagent("resume", "-m", REPLAY, thread_id, "second", home=home, cwd=work, timeout=60)
        assert second.returncode != 0
        assert f"pid {first.pid}" in second.stderr and thread_id in second.stderr, second.stderr
        assert "Traceback" not in second.stderr
    finally:
        release.touch()
        out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    assert "first is done" in out
    lines, warnings = read_rollout(home / "threads" / f"{thread_id}.jsonl")
    assert warnings == []
    turns = [ln for ln in lines if isinstance(ln, TurnRecord)]
    assert [t.status for t in turns] == ["started", "completed", "started", "completed"]
    loaded = ThreadStore(home).load(thread_id)
    assert [i.text for i in loaded.items if i.type == "user_message"] == ["hello", "first"]  # type: ignore[union-attr]


def test_resumes_at_once_never_interleave_a_turn(tmp_path: Path) -> None:
    home, work = tmp_path / "home", project(tmp_path)
    thread_id = new_thread(home, work)
    procs: list[subprocess.Popen[str]] = [
        spawn("resume", "-m", REPLAY, thread_id, f"at once {n}", home=home, cwd=work) for n in range(3)
    ]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
    for code, err in results:
        assert code == 0 or "is being written by" in err, err
    lines, warnings = read_rollout(home / "threads" / f"{thread_id}.jsonl")
    assert warnings == []
    owner: list[str] = []  # the turn each line belongs to, in file order
    for line in lines[1:]:
        turn_id = line.turn_id if isinstance(line, TurnRecord) else line.item.turn_id  # type: ignore[union-attr]
        assert not (isinstance(line, TurnRecord) and line.status == "aborted"), line
        if not owner or owner[-1] != turn_id:
            assert turn_id not in owner, f"turn {turn_id} interleaved with another"
            owner.append(turn_id)
    assert len(owner) == 1 + sum(code == 0 for code, _ in results)
