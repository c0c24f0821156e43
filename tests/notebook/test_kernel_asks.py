"""URL-mode elicitation and ``-i`` interpolation in a real kernel.

URL mode: the form shows the server's message and the link and nothing opens it (the kernel's
``$BROWSER`` is a recorder that must stay unused); Done (accept) and Decline are clicked over
comm and the server records exactly that answer.
"""

from __future__ import annotations

import json
import sys

import pytest

from tests.notebook.harness import HISTORY, SERVERS, call, executions

pytestmark = pytest.mark.timeout(180)


def push_server(record) -> str:
    """The push-elicitation test server (legacy protocol: ``ctx.elicit_url``), calls pre-approved."""
    return (
        "[mcp_servers.push]\n"
        f"command = {json.dumps(sys.executable)}\n"
        f"args = [{json.dumps(str(SERVERS / 'elicit_push.py'))}]\n"
        f"env = {{ RECORD_FILE = {json.dumps(str(record))} }}\n"
        'protocol = "legacy"\n'
        'default_tools_approval_mode = "approve"\n'
    )


def test_url_elicitation_shows_the_link_never_opens_it_and_takes_the_answer(make_kernel, tmp_path):
    rec, opened = tmp_path / "push.jsonl", tmp_path / "browser-opened"
    browser = tmp_path / "browser.sh"
    browser.write_text(f"#!/bin/sh\necho \"$@\" >> {opened}\n")
    browser.chmod(0o755)
    kernel, _ = make_kernel(
        call("mcp__push__ask_url"), {"text": "Signed in."},
        call("mcp__push__ask_url"), {"text": "Not signed in."},
        extra=push_server(rec), env={"BROWSER": str(browser)},
    )
    for runs, (button, action) in enumerate((("Done", "accept"), ("Decline", "decline"))):
        cell = kernel.execute("%%agent --wait\nSign me in", wait=False)
        clicked = kernel.wait_for("ButtonModel", description=button, disabled=False)
        shown = [w.state["value"] for w in kernel.find("HTMLModel") if "Please sign in" in w.state.get("value", "")]
        assert shown, "the server's message is shown"
        links = [w.state["value"] for w in kernel.find("HTMLModel") if 'href="https://example.com/login"' in w.state.get("value", "")]
        assert links and 'target="_blank"' in links[-1] and "<script" not in links[-1]
        assert len(executions(rec)) == runs  # the tool waits for the user's answer
        kernel.click(clicked)
        assert kernel.reply(cell["msg_id"], 60)["content"]["status"] == "ok"
        assert executions(rec)[-1] == {**executions(rec)[-1], "tool": "ask_url", "action": action}
        outputs = [i for i in kernel.eval(HISTORY) if i["type"] == "function_call_output"]
        assert outputs[-1]["output"] == action
    assert not opened.exists(), "nothing may open the link for the user"
    assert any("Please sign in" in w.state.get("value", "") and "answered by you" in w.state.get("value", "")
               for w in kernel.find("HTMLModel"))


def test_interpolation_only_with_dash_i(make_kernel):
    kernel, _ = make_kernel({"text": "One."}, {"text": "Two."})
    kernel.run("topic = 'cats'\nclass Cfg: lr = 0.5\ncfg = Cfg()")
    kernel.run("%%agent --wait -i\nWrite about {topic} at lr {cfg.lr}, keep {{braces}}")
    kernel.run("%%agent --wait\nWrite about {topic} at lr {cfg.lr}, keep {{braces}}")
    prompts = [i["text"] for i in kernel.eval(HISTORY) if i["type"] == "user_message"]
    assert prompts == [
        "Write about cats at lr 0.5, keep {braces}",
        "Write about {topic} at lr {cfg.lr}, keep {{braces}}",
    ]
    _, out = kernel.run("%%agent --wait -i\nWrite about {nosuch}")
    assert "{nosuch} names no variable" in out and "usage: %%agent" in out and "Traceback" not in out
    assert len([i for i in kernel.eval(HISTORY) if i["type"] == "user_message"]) == 2  # no turn ran
