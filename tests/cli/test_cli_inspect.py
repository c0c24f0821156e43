"""``nbagent inspect`` from a shell: no live session, so each view says where it comes from, and
``--json`` is one document a program can read."""

from __future__ import annotations

import json
from pathlib import Path

from nbagent.models.responses import to_input_items, to_tools
from nbagent.protocol import ItemAdapter, ToolSpec
from tests.cli.proc import SERVERS, nbagent, one_line_error, stdio_server

SECRET = "tok-SECRET-cli-90210"


def _project(tmp_path: Path, top: str = "") -> Path:
    project = tmp_path / "project"
    project.mkdir()
    leaky = stdio_server("leaky", SERVERS / "leaky.py", startup_timeout_sec=30)
    (project / "nbagent.toml").write_text(top + leaky + f'env = {{ LEAKY_TOKEN = "{SECRET}" }}\n', encoding="utf-8")
    return project


def _json(proc) -> dict:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_inspect_wire_starts_the_server_and_shows_its_startup_traffic_redacted(tmp_path: Path) -> None:
    project = _project(tmp_path)
    shown = _json(nbagent("-C", str(project), "inspect", "wire", "leaky", "-n", "50", "--json", home=tmp_path / "home"))
    assert shown["server"] == "leaky" and shown["state"] == "ready"
    methods = [m["method"] for m in shown["messages"] if m["direction"] == "sent"]
    assert "tools/list" in methods
    listed = next(m for m in shown["messages"] if m["kind"] == "response" and "tools" in m["message"]["result"])
    assert listed["direction"] == "received" and listed["seq"] > 1
    text = json.dumps(shown)
    assert SECRET not in text and "Bearer [redacted]" in text and "my token is [redacted]" in text

    lines = nbagent("-C", str(project), "inspect", "wire", "leaky", "-n", "2", home=tmp_path / "home")
    assert lines.returncode == 0, lines.stderr
    assert lines.stdout.startswith("MCP server 'leaky': last 2 JSON-RPC message(s)") and SECRET not in lines.stdout


def test_inspect_tools_shows_identity_approval_under_a_policy_and_the_schema_changes(tmp_path: Path) -> None:
    project = _project(tmp_path)
    home = tmp_path / "home"
    tools = {t["name"]: t for t in _json(nbagent("-C", str(project), "inspect", "tools", "--json", home=home))["tools"]}
    when = tools["mcp__leaky__when"]
    assert (when["server"], when["raw_name"], when["title"]) == ("leaky", "when", "When <b>now</b>")
    assert when["effective"] == "asks" and "not marked trusted" in when["why"]
    assert {"path": "properties.at.format", "change": "removed", "raw": "bogus", "exposed": None} in when["schema_changes"]
    assert any("format 'bogus' dropped" in w for w in when["warnings"])
    assert SECRET not in json.dumps(tools)  # the server put it in a description

    never = _json(nbagent("-C", str(project), "inspect", "tools", "--policy", "never", "--json", home=home))["tools"]
    assert {t["effective"] for t in never} == {"declined"}
    auto = _json(nbagent("-C", str(project), "inspect", "tools", "--policy", "full-auto", "--json", home=home))["tools"]
    assert {t["effective"] for t in auto} == {"runs"}


def test_inspect_request_and_turn_read_what_the_run_recorded(openai_server, tmp_path: Path) -> None:
    project = _project(tmp_path, f'model = "test-model"\n[model_providers.openai]\nbase_url = "{openai_server.base_url}"\n')
    home = tmp_path / "home"
    openai_server.script([
        {"text": "Checking.", "tool_calls": [{"name": "mcp__leaky__whoami", "arguments": {"note": {"k": 1}}}]},
        {"text": "Done."},
    ])  # fmt: skip
    run = nbagent("-C", str(project), "run", "--policy", "full-auto", "--json", "who am i", home=home,
                  env={"OPENAI_API_KEY": "sk-test-cli"})  # fmt: skip
    assert run.returncode == 0, run.stderr
    [thread] = [p.stem for p in (home / "threads").glob("*.jsonl")]
    for view in (f"{thread}.request.json", f"{thread}.turns.ndjson"):  # what the run wrote for inspect
        assert SECRET.encode() not in (home / "threads" / view).read_bytes()

    request = _json(nbagent("-C", str(project), "inspect", "request", thread, "--json", home=home))
    sent = openai_server.requests[-1]
    shown = {
        "input": to_input_items([ItemAdapter.validate_python(i) for i in request["items"]]),
        "instructions": request["instructions"],
        "tools": to_tools([ToolSpec(**t) for t in request["tools"]]),
    }
    assert SECRET not in json.dumps(sent)  # the server's instructions and description hold it
    assert shown == {key: sent[key] for key in ("input", "instructions", "tools")}  # exactly what was sent

    every = _json(nbagent("-C", str(project), "inspect", "request", thread, "--all", "--json", home=home))
    assert every["dropped"] == 0 and every["turn_id"] == request["turn_id"] and every["requests"][-1] == request
    both = [
        {"input": to_input_items([ItemAdapter.validate_python(i) for i in r["items"]]), "instructions": r["instructions"],
         "tools": to_tools([ToolSpec(**t) for t in r["tools"]])}
        for r in every["requests"]
    ]  # fmt: skip
    assert both == [{key: s[key] for key in ("input", "instructions", "tools")} for s in openai_server.requests[-2:]]
    text = nbagent("-C", str(project), "inspect", "request", thread, "--all", home=home).stdout
    assert text.startswith(f"turn {request['turn_id']}: model requests 1-2 as sent")
    assert text.index("request 1: model request at") < text.index("request 2: model request at")

    turn = _json(nbagent("-C", str(project), "inspect", "turn", thread, "--json", home=home))
    assert turn["source"] == "events" and turn["status"] == "completed" and turn["turn_id"] == request["turn_id"]
    types = [e["type"] for e in turn["entries"]]
    assert types[0] == "turn_started" and "tool_call_end" in types and types[-1] == "turn_completed"

    named = _json(nbagent("-C", str(project), "inspect", "turn", thread, turn["turn_id"], "--json", home=home))
    assert named == turn

    (home / "threads" / f"{thread}.turns.ndjson").unlink()  # a thread from before timelines were kept
    recorded = _json(nbagent("-C", str(project), "inspect", "turn", thread, "--json", home=home))
    assert recorded["source"] == "rollout" and recorded["turn_id"] == turn["turn_id"]
    assert [e["type"] for e in recorded["entries"]][:2] == ["turn_started", "user_message"]
    plain = nbagent("-C", str(project), "inspect", "turn", thread, home=home)
    assert "no events were kept for it" in plain.stdout


def test_inspect_names_what_it_cannot_find_in_one_line(tmp_path: Path) -> None:
    project = _project(tmp_path)
    home = tmp_path / "home"
    assert "no thread 'nosuch'" in one_line_error(nbagent("-C", str(project), "inspect", "request", "nosuch", home=home))
    assert "no MCP server named 'ghost'" in one_line_error(nbagent("-C", str(project), "inspect", "wire", "ghost", home=home))
    assert "-n must be at least 1" in one_line_error(nbagent("-C", str(project), "inspect", "wire", "leaky", "-n", "0", home=home))
