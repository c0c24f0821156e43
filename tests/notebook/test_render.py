"""The turn view, tool card, text renderer, option parsing and the cell transformer, in-process."""

from __future__ import annotations

import time

import pytest

from nbagent.notebook.options import UsageError, interpolate, parse_cell_line
from nbagent.notebook.render import WidgetTurn
from nbagent.notebook.text_render import TextTurn
from nbagent.notebook.throttle import DEFAULT_INTERVAL
from nbagent.notebook.transform import rewrite
from nbagent.protocol import (
    AgentMessage,
    AgentMessageDelta,
    ApprovalRequested,
    ApprovalResolved,
    Event,
    ImageBlock,
    Interrupt,
    Progress,
    TextBlock,
    TokenCount,
    TokenUsage,
    TokenUsageInfo,
    ToolCallBegin,
    ToolCallEnd,
    TurnAborted,
    TurnCompleted,
)
from tests.waiting import until


def view(sent: list) -> WidgetTurn:
    return WidgetTurn(sent.append, model_label="scripted replay: x.json", scripted=True, thread="t1", policy="on-request")


async def test_deltas_are_coalesced_and_the_final_text_wins():
    v = view([])
    started = time.monotonic()
    for i in range(2000):
        v.handle(Event(msg=AgentMessageDelta(item_id="m", delta=f"w{i} ")))
        if i % 400 == 399:  # a pause in the stream: what came is shown once the interval is up
            stream, shown = v.streams["m"], v.streams["m"].updates
            await until(lambda stream=stream, shown=shown: stream.updates > shown, f"the update showing delta {i}")
    elapsed = time.monotonic() - started
    stream = v.streams["m"]
    assert stream.updates <= 1 + elapsed / DEFAULT_INTERVAL  # at most one update per interval (20/s)
    assert stream.updates <= 2 + 2000 // 400  # one per pause, not one per delta
    v.handle(Event(msg=AgentMessage(item_id="m", text="**final**")))
    v.handle(Event(msg=TurnCompleted()))
    assert stream.widget.outputs[0]["data"]["text/markdown"] == "**final**"
    assert v.done and v.stop_button.layout.display == "none"


def test_scripted_model_is_labelled_and_full_auto_is_loud():
    v = view([])
    assert "scripted" in v.header.value and " AI" not in v.header.value
    v.set_header(model_label="gpt-5.1", scripted=False, thread="t", policy="full-auto")
    assert "EVERY tool call runs without asking" in v.header.value


def test_tool_card_lifecycle_progress_images_and_errors():
    v = view([])
    v.handle(Event(msg=ToolCallBegin(call_id="c1", tool="mcp__demo__write_note", server="demo", raw_tool="write_note", title="Write a note", arguments={"name": "a"})))
    card = v.cards["c1"]
    assert "demo" in card.header.value and "write_note" in card.header.value and "Write a note" in card.header.value
    assert "&quot;name&quot;" in card.arguments.value
    v.handle(Event(msg=Progress(call_id="c1", progress=1, total=4, message="step")))
    card._progress_coalescer.flush()
    assert card.progress.value == 1 and card.progress.max == 4 and "step" in card.progress_label.value
    v.handle(Event(msg=ToolCallEnd(call_id="c1", tool="mcp__demo__write_note", output="ok", duration_ms=1500,
                         content=[TextBlock(text="ok"), ImageBlock(data="AAAA", mime_type="image/png"), ImageBlock(data="x", mime_type="text/html")])))
    assert card.status == "completed" and "1.50 s" in card.header.value
    assert 'src="data:image/png;base64,AAAA"' in card.result.value and "text/html not shown" in card.result.value
    v.handle(Event(msg=ToolCallBegin(call_id="c2", tool="t", arguments=None, raw_arguments="{bad")))
    v.handle(Event(msg=ToolCallEnd(call_id="c2", tool="t", output="boom", is_error=True, status="failed")))
    assert v.cards["c2"].status == "failed" and "error" in v.cards["c2"].result.value and "{bad" in v.cards["c2"].arguments.value


def test_approval_in_the_view_and_stop_button():
    sent: list = []
    stopped: list = []
    v = WidgetTurn(sent.append, stop=lambda: stopped.append(1), model_label="m", scripted=False, thread="t", policy="untrusted")
    v.handle(Event(msg=ToolCallBegin(call_id="c1", tool="t", arguments={})))
    v.handle(Event(msg=ApprovalRequested(call_id="c1", tool="t", arguments={})))
    assert v.cards["c1"].status == "awaiting"
    v.handle(Event(msg=ApprovalResolved(call_id="c1", decision="deny", by="timeout")))
    assert v.cards["c1"].status == "denied" and "timed out" in v.approvals["c1"].record.value
    v.stop_button.click()
    assert stopped == [1]
    last = TokenUsage(input_tokens=3, output_tokens=4, total_tokens=7)
    v.handle(Event(msg=TokenCount(info=TokenUsageInfo(total_token_usage=last, last_token_usage=last))))
    assert "tokens: 3 in, 4 out" in v.usage.value
    v.handle(Event(msg=TurnAborted(reason="stopped")))
    v.stop_button.click()
    assert stopped == [1]
    default = view(sent)
    default.stop_button.click()
    assert isinstance(sent[-1], Interrupt)


def test_text_renderer_prints_the_turn_and_how_to_answer():
    out: list[str] = []
    t = TextTurn(lambda op: None, model_label="replay: x", scripted=True, thread="t", policy="on-request", out=out.append)
    for e in [AgentMessageDelta(item_id="m", delta="Hello "), AgentMessageDelta(item_id="m", delta="there"),
              AgentMessage(item_id="m", text="Hello there"),
              ToolCallBegin(call_id="c1", tool="mcp__d__w", server="d", raw_tool="w", arguments={"a": 1}),
              ApprovalRequested(call_id="c1", tool="mcp__d__w", server="d", raw_tool="w", arguments={"a": 1}),
              ToolCallEnd(call_id="c1", tool="mcp__d__w", output="done"), TurnCompleted()]:
        t.handle(Event(msg=e))
    text = "".join(out)
    assert "scripted model (replay: x)" in text and "Hello there\n" in text
    assert "%agent approve c1" in text and "✔ mcp__d__w completed" in text and "[turn completed]" in text


def test_options_and_interpolation():
    o = parse_cell_line("-t exp --policy never --new --wait -i -m replay:x.json")
    assert (o.thread, o.policy, o.new, o.wait, o.interpolate, o.model) == ("exp", "never", True, True, True, "replay:x.json")
    for bad in ("--policy maybe", "--nope", "-t"):
        with pytest.raises(UsageError):
            parse_cell_line(bad)
    class Obj:
        attr = 5
    assert interpolate("n={n} o={o.attr} {{x}} {1}", {"n": 3, "o": Obj()}) == "n=3 o=5 {x} {1}"
    with pytest.raises(UsageError):
        interpolate("{missing}", {})


def test_cell_transformer_only_touches_agent_cells():
    assert rewrite(["x = 1\n"]) == ["x = 1\n"]
    assert rewrite(["%%agentx\n"]) == ["%%agentx\n"]
    (line,) = rewrite(["%%agent --wait -t 'a b'\n", "Do {x} '''now'''\n"])
    assert line.startswith("await _nbagent_cell(")
    assert eval(line[len("await _nbagent_cell"):]) == ("--wait -t 'a b'", "Do {x} '''now'''\n")


@pytest.mark.parametrize("line", ["help", "--help"])
def test_agent_help_prints_the_commands(line, capsys):
    from nbagent.notebook.agent import KernelAgent
    from nbagent.notebook.commands import run_line

    run_line(KernelAgent(shell=None), line)
    out, err = capsys.readouterr()
    assert err == "" and "unknown command" not in out
    for command in ("%agent threads", "%agent resume ID", "%agent mcp add NAME", "%agent approve", "%agent deny CALL_ID",
                    "%agent serve", "%agent stop", "%agent history", "%%agent [-t THREAD]"):
        assert command in out


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("mcp --help", "%agent mcp add NAME --url URL"),
        ("resume", "missing argument for 'resume'; usage:\n  %agent resume ID"),
        ("new a b", "unexpected argument 'b' for 'new'; usage:\n  %agent new [NAME]"),
        ("serve --port 99999", "N from 0, any free port, to 65535"),
    ],
)
def test_a_command_used_wrongly_prints_its_own_usage(line, shown, capsys):
    from nbagent.notebook.agent import KernelAgent
    from nbagent.notebook.commands import run_line

    agent = KernelAgent(shell=None)
    run_line(agent, line)
    out, err = capsys.readouterr()
    assert shown in out + err and "unknown" not in out + err
    assert agent.outside_view is None  # a refused serve shows no serving panel
