"""``%%agent`` in a real ipykernel through jupyter_client, with the replay model and the demo
MCP server over stdio. Clicks and form values travel as comm messages, as from a browser; the
server's own execution record is the evidence of what ran."""

from __future__ import annotations

import json
import time

import pytest

from tests.notebook.harness import HISTORY, executions, fill_experiment, outputs_of

pytestmark = pytest.mark.timeout(180)

WRITE = {"name": "mcp__demo__write_note", "arguments": {"name": "hello", "text": "hi there"}}
LOG = {"name": "mcp__demo__log_experiment", "arguments": {"name": "e1"}}


def test_approve_by_click_runs_the_tool_exactly_once(make_kernel):
    kernel, record = make_kernel({"text": "Writing.", "tool_calls": [WRITE]}, {"text": "Written."})
    cell = kernel.execute("%%agent --wait\nWrite a hello note", wait=False)
    approve = kernel.wait_for("ButtonModel", description="Approve")
    assert executions(record) == []  # nothing runs before the decision
    kernel.click(approve)
    reply = kernel.reply(cell["msg_id"], 60)
    assert reply["content"]["status"] == "ok"
    runs = [e for e in executions(record) if e["tool"] == "write_note"]
    assert [r["arguments"] for r in runs] == [{"name": "hello", "text": "hi there"}]
    (out,) = outputs_of(kernel)
    assert out["status"] == "completed" and "wrote hello.md" in out["output"]
    assert kernel.find("ButtonModel", description="Approve")[-1].state.get("disabled") is True


def test_deny_by_click_does_not_run(make_kernel):
    kernel, record = make_kernel({"text": "Writing.", "tool_calls": [WRITE]}, {"text": "Not written."})
    cell = kernel.execute("%%agent --wait\nWrite a hello note", wait=False)
    kernel.wait_for("ButtonModel", description="Deny")
    reason = kernel.wait_for("TextModel", description="deny reason")
    kernel.set_state(reason, value="not now")
    kernel.click(kernel.find("ButtonModel", description="Deny")[-1])
    assert kernel.reply(cell["msg_id"], 60)["content"]["status"] == "ok"
    assert executions(record) == []
    (out,) = outputs_of(kernel)
    assert out["status"] == "denied" and "not now" in out["output"]


def test_elicitation_answered_through_form_widgets(make_kernel):
    extra = "[mcp_servers.demo.tools.log_experiment]\napproval_mode = \"approve\"\n"
    kernel, record = make_kernel({"text": "Logging.", "tool_calls": [LOG]}, {"text": "Logged."}, extra=extra)
    cell = kernel.execute("%%agent --wait\nLog experiment e1", wait=False)
    accept = kernel.wait_for("ButtonModel", description="Accept")
    expected = fill_experiment(kernel)
    kernel.wait_handled()
    kernel.click(accept)
    assert kernel.reply(cell["msg_id"], 60)["content"]["status"] == "ok"
    (run,) = executions(record)
    assert run["content"] == expected


def test_interrupt_while_waiting_for_approval_keeps_the_thread_usable(make_kernel):
    kernel, record = make_kernel(
        {"text": "Writing.", "tool_calls": [WRITE]}, {"text": "Second turn answer."}
    )
    cell = kernel.execute("%%agent --wait\nWrite a hello note", wait=False)
    kernel.wait_for("ButtonModel", description="Approve")
    kernel.interrupt()
    reply = kernel.reply(cell["msg_id"], 30)
    assert reply["content"]["status"] == "ok"
    assert "interrupted" in kernel.outputs(cell["msg_id"])
    assert executions(record) == []
    assert kernel.find("ButtonModel", description="Approve")[-1].state.get("disabled") is True
    second = kernel.execute("%%agent --wait\nAnything else?")
    assert second["content"]["status"] == "ok"
    history = kernel.eval(HISTORY)
    assert [i["status"] for i in history if i["type"] == "function_call_output"] == ["aborted"]
    assert history[-1] == {**history[-1], "type": "assistant_message", "text": "Second turn answer."}


def test_background_turn_returns_at_once_and_text_approve_resolves_the_panel(make_kernel):
    kernel, record = make_kernel({"text": "Writing.", "tool_calls": [WRITE]}, {"text": "Written."})
    kernel.execute("1", ui=True)  # let the session finish opening (first import of the core)
    t0 = time.monotonic()
    reply = kernel.execute("%%agent\nWrite a hello note")
    assert reply["content"]["status"] == "ok" and time.monotonic() - t0 < 3
    kernel.wait_for("ButtonModel", description="Approve")  # the turn goes on after the cell ended
    pending = kernel.eval("list(__import__('nbagent.notebook', fromlist=['_']).session().snapshot().pending_approvals)")
    answer = kernel.execute(f"%agent approve {pending[0]}")
    assert pending[0] in kernel.outputs(answer["parent_header"]["msg_id"])
    deadline = time.monotonic() + 30
    while not executions(record) and time.monotonic() < deadline:
        kernel.pump(0.1)
    assert len(executions(record)) == 1
    kernel.pump(1.0)
    assert kernel.find("ButtonModel", description="Approve")[-1].state.get("disabled") is True
    assert any("approved once" in w.state.get("value", "") for w in kernel.find("HTMLModel"))


def test_headless_run_with_nobody_answering_keeps_its_policy_and_declines_at_once(make_kernel):
    """No notebook UI and no code that answers: the config's policy stays, and the call that needs
    approval is declined at once (not after a wait), saying why."""
    kernel, record = make_kernel({"text": "Writing.", "tool_calls": [WRITE]}, {"text": "Could not write."})
    reply = kernel.execute("%%agent\nWrite a hello note", ui=False, timeout=60)
    text = kernel.outputs(reply["parent_header"]["msg_id"])
    assert reply["content"]["status"] == "ok"
    assert "policy on-request" in text and "policy 'never'" not in text
    assert "no code in this notebook answers (nbagent.notebook.answers_asks)" in text
    assert "no front end is attached to ask: it was declined without running." in text
    assert "[turn completed]" in text and "Could not write." in text
    assert executions(record) == []


def test_headless_run_with_an_explicit_policy_says_how_long_an_ask_waits_then_declines(make_kernel, tmp_path):
    """Code that said it answers (``answers_asks``) but leaves an ask: it waits the headless
    bound, then is settled by timeout, never as anyone's decision."""
    kernel, record = make_kernel(
        {"text": "Writing.", "tool_calls": [WRITE]}, {"text": "Could not write."},
        env={"NBAGENT_HEADLESS_ASK_TIMEOUT": "0.5"},
    )
    kernel.execute("import nbagent.notebook; nbagent.notebook.answers_asks()", ui=False)
    reply = kernel.execute("%%agent --policy on-request\nWrite a hello note", ui=False, timeout=60)
    text = kernel.outputs(reply["parent_header"]["msg_id"])
    assert reply["content"]["status"] == "ok"
    assert "this notebook's code answers approvals and questions (nbagent.notebook.answers_asks); one it leaves is declined after 0.5 s" in text
    assert "deny (timeout) — No answer within 0.5 s." in text and "Could not write." in text
    assert executions(record) == []
    (rollout,) = (tmp_path / "home" / "threads").glob("*.jsonl")
    (approval,) = [r["item"] for r in map(json.loads, rollout.read_text().splitlines()) if r.get("item", {}).get("type") == "approval"]
    assert (approval["decision"], approval["by"]) == ("deny", "timeout")  # nobody decided: not recorded as the user's no


def test_bad_arguments_print_usage_not_a_traceback(make_kernel):
    kernel, _ = make_kernel({"text": "unused"})
    for code in ("%%agent --policy sometimes\ngoal", "%%agent --bogus\ngoal", "%agent frobnicate", "%agent deny"):
        reply = kernel.execute(code)
        text = kernel.outputs(reply["parent_header"]["msg_id"])
        assert reply["content"]["status"] == "ok", code
        assert "usage:" in text and "Traceback" not in text, (code, text)


EXTRA = [
    ("%agent status --verbose", "unexpected argument '--verbose' for 'status'"),
    ("%agent history 5 extra", "unexpected argument '5' for 'history'"),
    ("%agent threads all 5", "unexpected argument '5' for 'threads'"),
    ("%agent help mcp", "unexpected argument 'mcp' for 'help'"),
    ("%agent stop now", "unexpected argument 'now' for 'stop'"),
    ("%agent compact now", "unexpected argument 'now' for 'compact'"),
    ("%agent new a b", "unexpected argument 'b' for 'new'"),
    ("%agent context on off", "unexpected argument 'off' for 'context'"),
    ("%agent frontend text widgets", "unexpected argument 'widgets' for 'frontend'"),
    ("%agent approve call_1 yes", "unexpected argument 'yes' for 'approve'"),
    ("%agent resume", "missing argument for 'resume'"),
    ("%agent mcp help me", "unexpected argument 'me' for 'mcp help'"),
    ("%agent mcp restart demo again", "unexpected argument 'again' for 'mcp restart'"),
]


def test_a_command_given_an_argument_it_does_not_take_says_so_and_does_nothing(make_kernel):
    """The words a command does not take are a one-line error naming the command and the word,
    then its usage; never a quiet run that ignores them."""
    kernel, _ = make_kernel({"text": "unused"})
    kernel.run("import nbagent.notebook as nb; from nbagent.notebook.extension import get_agent; _ = await nb.ready()")
    before = kernel.eval("[get_agent().frontend_override, get_agent().context_on, nb.session().snapshot().thread_id]")
    for line, said in EXTRA:
        _, out = kernel.run(line)
        first, *rest = out.splitlines()
        assert first.startswith(f"%agent: {said}"), (line, out)
        command = line.split()[1]
        assert any(r.startswith(f"  %agent {command} ") or r.startswith(f"  %agent [{command}] ") for r in rest), (line, out)
        assert "usage: %agent" in out and "Traceback" not in out, (line, out)
    kernel.pump(0.5)  # a command that ran anyway would be reporting by now
    assert kernel.eval("[get_agent().frontend_override, get_agent().context_on, nb.session().snapshot().thread_id]") == before


def test_approve_or_deny_with_nothing_pending_says_nothing_is_pending(make_kernel):
    """Not that a CALL_ID is needed: no CALL_ID would help."""
    kernel, _ = make_kernel({"text": "unused"})
    kernel.run("import nbagent.notebook as nb; _ = await nb.ready()")
    for line in ("%agent approve", "%agent deny"):
        _, out = kernel.run(line)
        assert out.startswith("%agent: no approval is pending\n"), (line, out)
        assert "needs a CALL_ID" not in out and "usage: %agent" in out, (line, out)


@pytest.mark.parametrize("port", ["²", "٣"])
def test_serve_refuses_a_port_that_is_not_ascii_digits_with_its_usage(port, capsys):
    from nbagent.notebook.agent import KernelAgent
    from nbagent.notebook.commands import run_line

    run_line(KernelAgent(shell=None), f"serve --port {port}")
    err = capsys.readouterr().err
    assert err.startswith("%agent: serve [--port N] | serve --stop (N from 0"), err
