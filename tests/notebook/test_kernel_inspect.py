"""``%agent inspect`` in a real kernel: widgets where they render, text where they do not, JSON
for programs; the request it shows is the one the fake OpenAI server received."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from nbagent.models.chat import to_messages, to_tools
from nbagent.protocol import ItemAdapter, ToolSpec
from tests.notebook.harness import Kernel
from tests.waiting import wait_for

SERVERS = Path(__file__).resolve().parents[1] / "servers"
SECRET = "tok-SECRET-kernel-4471"


def _json_output(kernel: Kernel, line: str) -> dict:
    _, out = kernel.run(line)
    return json.loads(out)


def test_inspect_shows_the_request_sent_the_turn_and_the_redacted_wire(openai_server, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "nbagent.toml").write_text(
        f'model = "test-model"\nmodel_provider = "local"\nhome = "{home}"\n'
        f'[model_providers.local]\nbase_url = "{openai_server.base_url}"\nwire_api = "chat"\n'
        f"[mcp_servers.leaky]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(SERVERS / 'leaky.py'))}]\n"
        f'env = {{ LEAKY_TOKEN = "{SECRET}" }}\n'
    )
    openai_server.script([
        {"text": "Checking.", "tool_calls": [{"name": "mcp__leaky__whoami", "arguments": {"note": {"password": "pw-typed-1234"}}}]},
        {"text": "Done."},
    ])  # fmt: skip
    kernel = Kernel(tmp_path, env={"NBAGENT_HOME": str(home), "OPENAI_API_KEY": "sk-test"})
    try:
        kernel.run("%load_ext nbagent")
        kernel.run("%%agent --wait --policy full-auto\nwho am i", timeout=120)
        wait_for(lambda: len(openai_server.requests) == 2, "both model requests")

        # the request: exactly what the provider got, through the client's own mapping; the secret
        # the server put in its instructions and description reached neither
        request = _json_output(kernel, "%agent inspect request --json")
        sent = openai_server.requests[-1]
        assert SECRET not in json.dumps(sent) and SECRET not in json.dumps(request)
        shown = {
            "messages": to_messages(request["instructions"], [ItemAdapter.validate_python(i) for i in request["items"]]),
            "tools": to_tools([ToolSpec(**t) for t in request["tools"]]),
        }
        assert shown == {"messages": sent["messages"], "tools": sent["tools"]}
        assert request["purpose"] == "turn" and request["model"] == "test-model"

        # every request of the turn, in order, each as sent
        every = _json_output(kernel, "%agent inspect request --all --json")
        assert every["dropped"] == 0 and every["requests"][-1] == request
        assert [
            {"messages": to_messages(r["instructions"], [ItemAdapter.validate_python(i) for i in r["items"]]),
             "tools": to_tools([ToolSpec(**t) for t in r["tools"]])}
            for r in every["requests"]
        ] == [{"messages": s["messages"], "tools": s["tools"]} for s in openai_server.requests]  # fmt: skip

        # the turn: ordered events with timing, deltas folded
        turn = _json_output(kernel, "%agent inspect turn --json")
        types = [e["type"] for e in turn["entries"]]
        assert types[0] == "turn_started" and types[-1] == "turn_completed" and turn["status"] == "completed"
        assert types.index("tool_call_begin") < types.index("tool_call_end")
        seqs = [e["seq"] for e in turn["entries"]]
        assert seqs == sorted(seqs) and turn["duration_ms"] >= turn["entries"][-1]["offset_ms"] >= 0

        # the tools: identity, approval under the session's policy (on-request), not the turn's
        tools = _json_output(kernel, "%agent inspect tools --json")
        [tool] = [t for t in tools if t["name"] == "mcp__leaky__whoami"]
        assert {t["name"]: t["source"] for t in tools}["run_python"] != "mcp"
        assert (tool["name"], tool["server"], tool["raw_name"]) == ("mcp__leaky__whoami", "leaky", "whoami")
        assert tool["effective"] == "asks" and "read-only" in tool["why"]

        # the wire: the call went out with _meta, the secret the server echoed is gone
        wire = _json_output(kernel, "%agent inspect wire leaky -n 50 --json")
        methods = [m["method"] for m in wire["messages"]]
        assert "tools/call" in methods
        call = next(m for m in wire["messages"] if m["method"] == "tools/call")
        assert "_meta" in call["message"]["params"]
        text = json.dumps(wire)
        assert SECRET not in text and "pw-typed-1234" not in text and "[redacted]" in text

        # widgets: tabs and accordions of escaped HTML
        before = set(kernel.widgets)
        kernel.run("%agent inspect request")
        tabs = kernel.wait_for("TabModel")
        assert tabs.state["titles"][0] == "instructions"
        html = " ".join(str(w.state.get("value")) for w in kernel.find("HTMLModel"))
        assert "&lt;img src=x onerror=alert(1)&gt;" in html and "<img src=x" not in html
        kernel.run("%agent inspect wire leaky")
        accordion = kernel.wait_for("AccordionModel")
        assert any("tools/call" in title for title in accordion.state["titles"])
        kernel.run("%agent inspect tools")
        tools_view = [w for w in kernel.find("AccordionModel") if "mcp__leaky__when (asks)" in w.state["titles"]]
        assert tools_view, "the tools accordion"
        html = " ".join(str(w.state.get("value")) for w in kernel.find("HTMLModel"))
        assert "When &lt;b&gt;now&lt;/b&gt;" in html and "properties.at.format" in html
        shown = [w.state for key, w in kernel.widgets.items() if key not in before]
        assert len(shown) >= 5 and SECRET not in json.dumps(shown, default=str)

        # text where widgets do not render
        kernel.run("%agent frontend text")
        _, out = kernel.run("%agent inspect wire leaky -n 50")
        assert "tools/call" in out and "[redacted]" in out and SECRET not in out
        _, out = kernel.run("%agent inspect tools")
        assert "mcp__leaky__whoami  <- leaky/whoami" in out and "under policy on-request: asks" in out
        _, out = kernel.run("%agent inspect request --all")
        assert "model requests 1-2 as sent" in out and out.index("request 1: ") < out.index("request 2: ")
        _, out = kernel.run("%agent inspect wire ghost")
        assert "no MCP server named 'ghost'" in out and "usage: %agent" in out
    finally:
        kernel.close()
