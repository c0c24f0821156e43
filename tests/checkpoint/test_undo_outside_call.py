"""A call an outside agent makes through ``%agent serve`` (the ``CallTool`` op) is a turn of its
own: what it changed in the workspace is checkpointed and can be undone like a model turn's; a
notebook file put back is named, since an open notebook shows it only once reloaded."""

from __future__ import annotations

from pathlib import Path

from nbagent import Session
from nbagent.config import Config
from nbagent.protocol import CallTool, Undo, UndoCompleted


async def test_an_outside_calls_change_is_undone(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    (ws / "nb.ipynb").write_text("{}")

    def write(text: str) -> str:
        (ws / "a.txt").write_text(text)
        (ws / "nb.ipynb").write_text(text)
        return "written"

    async with Session(config=Config(home=str(tmp_path / "home"), approval_policy="full-auto"), cwd=ws) as session:
        session.register_tool(write, name="write")
        await session.perform(CallTool(name="write", arguments={"text": "two\n"}, policy="full-auto"))
        assert (ws / "a.txt").read_text() == "two\n"
        done = await session.perform(Undo())
    assert isinstance(done, UndoCompleted) and done.success, done
    assert done.restored == ["a.txt", "nb.ipynb"] and (ws / "a.txt").read_text() == "one\n"
    assert (ws / "nb.ipynb").read_text() == "{}" and "once reloaded from disk: nb.ipynb" in done.message
