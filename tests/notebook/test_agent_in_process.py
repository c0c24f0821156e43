"""``%agent`` commands and ``%%agent`` turns against a real session in this process (no kernel)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nbagent.core.session import Session
from nbagent.notebook.agent import KernelAgent
from nbagent.notebook.commands import run_line
from tests.waiting import until


@pytest.fixture
def replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A scripted model in an empty ``$NBAGENT_HOME``, with no config from the user."""
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    for name in ("NBAGENT_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "replay.json"
    path.write_text(json.dumps({"responses": [{"text": "one"}, {"text": "two"}]}))
    return f"replay:{path}"


async def test_threads_counts_turns_in_words(replay: str, capsys: pytest.CaptureFixture[str]) -> None:
    agent = KernelAgent(shell=None, session_factory=lambda: Session(model=replay, thread_name="counted"))
    session = await agent.ready()
    try:
        await session.run("first")
        run_line(agent, "threads")
        assert "  1 turn  " in capsys.readouterr().out
        await session.run("second")
        run_line(agent, "threads")
        assert "  2 turns  " in capsys.readouterr().out
    finally:
        await agent.close()


async def test_threads_says_when_more_are_saved_than_it_lists(replay: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``%agent threads N`` lists the N most recent and says more are saved; ``all`` lists every
    one, with no such line; a count that is not one is refused."""
    Path(replay.removeprefix("replay:")).write_text(json.dumps({"responses": [{"text": "ok"}] * 4}))
    agent = KernelAgent(shell=None, session_factory=lambda: Session(model=replay, thread_name="t0"))
    session = await agent.ready()
    try:
        await session.run("in t0")  # a thread is saved from its first turn
        for n in range(1, 4):
            await session._thread.new(f"t{n}")
            await session.run(f"in t{n}")
        run_line(agent, "threads 2")
        listed = capsys.readouterr().out.splitlines()
        assert [line[2:].split()[1] for line in listed[:2]] == ["t3", "t2"] and listed[0][0] == "*"  # newest first
        assert listed[2:] == ["(the 2 most recently updated; more are saved: %agent threads all, or %agent threads N)"]
        run_line(agent, "threads all")
        listed = capsys.readouterr().out.splitlines()
        assert len(listed) == 4 and not any("more are saved" in line for line in listed)
        run_line(agent, f"threads {10**30}")  # more than SQLite counts: every one
        shown = capsys.readouterr()
        assert len(shown.out.splitlines()) == 4 and shown.err == "", shown.err
        for word in ("0", "-1", "two", "\u0663"):
            run_line(agent, f"threads {word}")
            out = capsys.readouterr().err
            assert out.startswith(f"%agent: threads takes a number of threads or 'all', not {word!r}"), out
    finally:
        await agent.close()


async def test_a_headless_turn_names_the_scripted_model_it_runs(replay: str, tmp_path: Path) -> None:
    from nbagent.notebook.runner import drive, prepare

    other = tmp_path / "other.json"
    other.write_text(json.dumps({"responses": [{"text": "from the other script"}]}))
    agent = KernelAgent(shell=None, session_factory=lambda: Session(model=replay, thread_name="counted"))
    agent.frontend_override = "headless"
    try:
        turn = prepare(agent, f"-m replay:{other}", "say something")
        assert turn is not None and turn.wait and turn.op.policy is None and turn.op.interactive is False
        assert (await drive(agent, turn)).msg.type == "turn_completed"
        header, note, *said = turn.view.lines  # type: ignore[attr-defined]
        assert "scripted replay: other.json" in header and "thread counted" in header and "policy on-request" in header
        assert "no notebook UI detected" in note and "declined at once" in note and "from the other script" in said
    finally:
        await agent.close()


async def test_status_names_each_instruction_source_and_its_size(
    replay: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "AGENTS.md").write_text("Prefer polars.\n")
    (tmp_path / "nbagent.toml").write_text('instructions = "Be brief."\n')
    agent = KernelAgent(shell=None, session_factory=lambda: Session(model=replay))
    await agent.ready()
    try:
        run_line(agent, "")
        out = capsys.readouterr().out
        assert "instructions: nbagent config (9 B)" in out
        assert "context:  ~0 tokens (window unknown: set model_context_window)" in out
        assert f"instructions: {tmp_path / 'AGENTS.md'} (project, 15 B)" in out
    finally:
        await agent.close()


async def test_compact_by_hand_prints_what_the_model_sees_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "replay.json"
    script.write_text(json.dumps({"responses": [{"text": "one"}], "summaries": ["Said hi."]}))
    agent = KernelAgent(shell=None, session_factory=lambda: Session(model=f"replay:{script}"))
    session = await agent.ready()
    try:
        await session.run("hi")
        run_line(agent, "compact")
        await until(lambda: any(i.type == "compaction" for i in session._thread.items), "the compaction item")
        out = await until(lambda: capsys.readouterr().out or None, "the printed line")
        assert "context compacted (asked)" in out and "2 items summarised" in out
    finally:
        await agent.close()
