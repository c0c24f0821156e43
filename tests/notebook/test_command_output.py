"""A command's output in its call's card, as it comes: the widget card and the text view draw the
turn model's ``output`` part before the call ends, and the widget keeps only the tail."""

from __future__ import annotations

from pathlib import Path

import ipywidgets as W
import pytest

from nbagent.notebook.agent import KernelAgent
from nbagent.notebook.render import WidgetTurn
from nbagent.notebook.text_render import TextTurn
from nbagent.notebook.toolcard import OUTPUT_TAIL_CHARS
from nbagent.protocol import Event, ExecCommandOutputDelta, ToolCallBegin, ToolCallEnd

BEGIN = Event(msg=ToolCallBegin(call_id="c1", tool="shell", raw_tool="shell", title="Run a command", arguments={"command": ["make"]}))


def delta(chunk: str, stream: str = "stdout") -> Event:
    return Event(msg=ExecCommandOutputDelta(call_id="c1", stream=stream, chunk=chunk))  # type: ignore[arg-type]


def shown(widget: W.Widget) -> str:
    if getattr(widget.layout, "display", None) == "none":
        return ""
    own = widget.value if isinstance(widget, W.HTML) else ""
    return own + "".join(shown(child) for child in getattr(widget, "children", ()))


def test_the_widget_card_shows_the_output_before_the_call_ends_and_keeps_its_tail() -> None:
    view = WidgetTurn(lambda op: None, model_label="replay: x", scripted=True, thread="t", policy="on-request")
    view.handle(BEGIN)
    card = view.cards["c1"]
    assert "compiling" not in shown(card.widget)
    view.handle(delta("compiling a.c\n"))
    view.handle(delta("warning: <b>unused</b>\n", "stderr"))
    text = shown(card.widget)  # no loop here to defer a redraw: each piece is drawn as it comes
    assert "compiling a.c" in text and "&lt;b&gt;unused&lt;/b&gt;" in text  # escaped, never markup
    assert card.status == "running"
    view.handle(delta("x" * (OUTPUT_TAIL_CHARS + 10)))
    card.on_end(ToolCallEnd(call_id="c1", tool="shell", output="Exit code: 0", duration_ms=5))
    assert "earlier characters" in card.output.value and "compiling a.c" not in card.output.value


def test_the_text_view_writes_the_output_as_it_comes() -> None:
    out: list[str] = []
    view = TextTurn(lambda op: None, model_label="replay: x", scripted=True, thread="t", policy="on-request", out=out.append)
    view.handle(BEGIN)
    view.handle(delta("line one\n"))
    assert out[-1] == "line one\n"
    view.handle(delta("\x1b[31mred\n"))
    assert "\x1b" not in out[-1] and "red" in out[-1]



async def test_the_notebooks_session_offers_shell_beside_run_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel's own session carries ``shell``, and ``run_python`` tells the model it is not sandboxed."""
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    agent = KernelAgent(shell=None)
    session = await agent.ready()
    try:
        tools = {spec.name: spec for spec in session.snapshot().tools}
        assert tools["shell"].source == "native" and "argv" in tools["shell"].description
        assert "outside any sandbox" in tools["run_python"].description
    finally:
        await agent.close()
