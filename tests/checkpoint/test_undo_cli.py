"""A turn's checkpoint and ``nbagent undo``: a model (the local OpenAI-compatible server, through
the real ``openai`` client) edits files with ``apply_patch`` and the sandboxed ``shell``; the
real ``nbagent undo`` command puts them back, in a git workspace (its branch, index and stash
untouched, as git itself reports) and in a plain folder; the next request tells the model."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nbagent import Session
from nbagent.cli import main
from nbagent.config import Config, ModelProviderConfig, load_config
from nbagent.protocol import GhostSnapshot, Undo, UndoCompleted, UndoItem
from nbagent.sandbox import available
from nbagent.store import ThreadStore
from nbagent.tools import ShellTools, shell_policy
from nbagent.tools.patch import PatchTools
from tests.cli.proc import nbagent

PATCH = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** Add File: new.txt\n+made\n*** End Patch"


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def patch_and_shell() -> list[dict[str, Any]]:
    """One turn: a patch (a.txt edited, new.txt added), then a command (s.txt made, b.txt removed)."""
    shell = call("shell", {"command": ["sh", "-c", "echo shelled > s.txt && rm b.txt"]})
    return [call("apply_patch", {"input": PATCH}), shell, {"text": "done"}]


def git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, capture_output=True, text=True, check=True).stdout


def git_state(ws: Path) -> list[str]:
    """What undo must never touch: the branch, HEAD, the index (staged content), the stash, the refs
    a person sees."""
    return [git(ws, "branch", "--show-current"), git(ws, "rev-parse", "HEAD"), git(ws, "ls-files", "-s"),
            git(ws, "stash", "list"), git(ws, "for-each-ref", "refs/heads", "refs/tags", "refs/stash")]  # fmt: skip


def files(ws: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(ws.iterdir()) if p.is_file()}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture(params=["git", "plain"])
def ws(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A workspace with a.txt and b.txt; as git: committed, one more change stashed and one staged."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    (ws / "b.txt").write_text("keep\n")
    if request.param == "git":
        git(ws, "init", "-q", "-b", "main")
        git(ws, "-c", "user.name=t", "-c", "user.email=t@t", "add", "a.txt", "b.txt")
        git(ws, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start")
        (ws / "b.txt").write_text("stashed\n")
        git(ws, "-c", "user.name=t", "-c", "user.email=t@t", "stash", "-q")
        (ws / "staged.txt").write_text("staged\n")
        git(ws, "add", "staged.txt")
    yield ws


def config_for(server: Any, home: Path, ws: Path) -> Config:
    config = load_config(ws, overrides={"home": str(home)})
    config.model, config.model_provider, config.approval_policy = "test-model", "local", "full-auto"
    config.model_providers = {"local": ModelProviderConfig(base_url=server.base_url, wire_api="responses")}
    config.api_key = "sk-test"
    return config


async def turn(server: Any, home: Path, ws: Path, steps: list[dict[str, Any]], thread: str | None = None) -> str:
    """One turn with ``apply_patch`` and ``shell`` on ``ws``; the thread's id."""
    server.script(steps)
    config = config_for(server, home, ws)
    async with Session(config=config, cwd=ws, thread=thread) as session:
        session.add_provider(PatchTools(ws))
        session.add_provider(ShellTools(shell_policy(config.model_copy(update={"sandbox_mode": "workspace-write"}))))
        result = await session.run("change files")
    assert result.ok, result.error
    return result.thread_id


def undo(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return nbagent("undo", *args, home=home)


async def undo_op(home: Path, thread: str, **op: Any) -> UndoCompleted:
    """The ``Undo`` op in this process, as ``%agent undo`` submits it."""
    async with Session(model="undo", config=load_config(None, overrides={"home": str(home)}), thread=thread) as session:
        done = await session.perform(Undo(**op))
    assert isinstance(done, UndoCompleted)
    return done


def items(home: Path, thread: str, kind: type) -> list[Any]:
    """The thread's items of ``kind``, read back from its rollout as resume reads them."""
    with ThreadStore(home) as store:
        return [item for item in store.load(thread).items if isinstance(item, kind)]


@pytest.mark.skipif(bool(available()), reason=f"no sandbox here: {available()}")
async def test_undo_puts_back_what_patch_and_shell_changed_and_the_model_is_told(openai_server, home: Path, ws: Path) -> None:
    before, state = files(ws), git_state(ws) if (ws / ".git").exists() else None
    thread = await turn(openai_server, home, ws, patch_and_shell())
    assert files(ws) != before and (ws / "s.txt").read_text() == "shelled\n" and not (ws / "b.txt").exists()

    done = undo(home, thread)
    assert done.returncode == 0, done.stderr
    assert files(ws) == before
    assert "a.txt" in done.stdout and "s.txt" in done.stdout and "b.txt" in done.stdout
    if state is not None:
        assert git_state(ws) == state  # branch, HEAD, index and stash as they were
    (snapshot,) = items(home, thread, GhostSnapshot)
    assert {c.path for c in snapshot.changes} == {"a.txt", "new.txt", "s.txt", "b.txt"}
    (undone,) = items(home, thread, UndoItem)
    assert undone.undone_turn_id == snapshot.turn_id

    again = await undo_op(home, thread)  # nothing left to undo: said, nothing touched
    assert not again.success and "nothing undone" in again.message and files(ws) == before

    await turn(openai_server, home, ws, [{"text": "ok"}], thread=thread)  # resumed: the model reads the undo
    sent = json.dumps(openai_server.requests[-1]["input"])
    assert "undid turn" in sent and "new.txt" in sent


def test_a_later_turn_or_a_persons_edit_stops_the_undo_naming_it(
    openai_server, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same in either kind of workspace (the plan reads the items, not the repository); the
    command runs in this process (``nbagent.cli.main``), as the first test runs it in its own."""
    ws = tmp_path / "plain"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    first = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** End Patch"
    second = "*** Begin Patch\n*** Update File: a.txt\n@@\n-two\n+three\n*** End Patch"
    thread = asyncio.run(turn(openai_server, home, ws, [call("apply_patch", {"input": first}), {"text": "1"}]))
    asyncio.run(turn(openai_server, home, ws, [call("apply_patch", {"input": second}), {"text": "2"}], thread=thread))
    first_turn, second_turn = (s.turn_id for s in items(home, thread, GhostSnapshot))

    def nbagent_undo(*args: str) -> tuple[int, str, str]:
        code = main(["undo", thread, *args])
        said = capsys.readouterr()
        return code, said.out, said.err

    code, out, _ = nbagent_undo("--list")  # which turns, which files
    assert code == 0 and out.splitlines() == [f"{first_turn}  can be undone  files: a.txt", f"{second_turn}  can be undone  files: a.txt"]

    code, _, err = nbagent_undo("--turn", first_turn)
    assert code == 1 and f"turn {second_turn}" in err and "undo it first" in err
    assert (ws / "a.txt").read_text() == "three\n"

    (ws / "a.txt").write_text("a person's words\n")  # changed after the turn: reported, kept
    code, _, err = nbagent_undo()
    assert code == 1 and "a.txt changed after turn" in err and (ws / "a.txt").read_text() == "a person's words\n"

    code, out, _ = nbagent_undo("--force")
    assert code == 0 and "overwrote" in out and (ws / "a.txt").read_text() == "two\n"
    code, out, _ = nbagent_undo("--turn", first_turn)
    assert code == 0 and (ws / "a.txt").read_text() == "one\n"
    assert nbagent_undo("--list")[1].splitlines() == [f"{first_turn}  undone  files: a.txt", f"{second_turn}  undone  files: a.txt"]
