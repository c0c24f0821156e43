"""Walkthrough 08: the lesson's running example, "fix a failing test", end to end.

A small package with a failing pytest test; the agent runs the tests, reads the file, proposes a
patch (an approval panel), applies it and reruns the tests green through a real MCP server; then
the lesson's table "stage / surface action / what the runtime really handles" is filled from this
run's recorded events and items.
"""

from __future__ import annotations

from nbagent.examples.cells import CellKind
from nbagent.examples.walkthroughs import Walkthrough

SETUP = r'''import json, sys
from nbagent.examples.walkthroughs.kit import autopilot, calc_project, check, claim, data, workspace

CONFIG = f"""
model = "replay:{data('08-fix-a-failing-test.json')}"   # a scripted model, offline
approval_policy = "on-request"                           # ask unless a call is known to be safe

[mcp_servers.workspace]                                  # a real MCP server over stdio
command = $python
args = ["-m", "nbagent.examples.workspace_server", "--root", "project", "--record", "server-record.jsonl"]
trusted = true                                           # read-only hints may skip approval
"""
work = workspace("08-fix-a-failing-test", CONFIG)

project = work / "project"
files = calc_project(project)                            # a package with a bug, and the test that catches it
(work / "server-record.jsonl").unlink(missing_ok=True)
print("\n".join(sorted(files)))'''

TAPS = r'''import nbagent.notebook as nb
from nbagent.protocol import ApprovalDecision

session = await nb.ready()

def answer(msg):
    """What a person would click, when the autopilot is on: approve the patch as proposed."""
    if msg.type == "approval_requested":
        return ApprovalDecision(call_id=msg.call_id, decision="approve")
    return None

print("autopilot:", autopilot(session, answer, on=AUTOPILOT))

events = []                                  # every event, as the widgets get them
session.subscribe(events.append)'''

CALLS = r'''from nbagent.protocol import ApprovalRecord, FunctionCall, FunctionCallOutput
items = session.snapshot().items
outputs = {i.call_id: i for i in items if isinstance(i, FunctionCallOutput)}
approvals = {i.call_id: i for i in items if isinstance(i, ApprovalRecord)}
for call in (i for i in items if isinstance(i, FunctionCall)):
    out, ok = outputs[call.call_id], approvals.get(call.call_id)
    asked = f"approval: {ok.decision} by {ok.by}" if ok else "no approval asked"
    print(f"{call.raw_tool:<12} {call.arguments:<72.72} -> {out.status:<9} error={out.is_error!s:<5} {asked}")'''

SAW = r'''from IPython.utils.capture import capture_output
with capture_output() as shown:              # the last request, as `%agent inspect request` shows it
    get_ipython().run_line_magic("agent", "inspect request --json")
last = json.loads(shown.stdout)
in_last = {i["id"] for i in last["items"]}

spec = next(t for t in session.snapshot().tools if t.server == "workspace" and t.raw_name == "apply_patch")
print("The tool as the server named it, and as the model sees it:")
print(f"    raw identity   ({spec.server!r}, {spec.raw_name!r})    model-visible name  {spec.name!r}")
print(f"    annotations    {spec.annotations.model_dump(exclude_none=True)}    trusted={spec.trusted}")
print(f"    parameters     {json.dumps(spec.parameters)[:200]}")

sent = [json.loads(line) for line in (work / "server-record.jsonl").read_text().splitlines()]
calls = [i for i in items if isinstance(i, FunctionCall)]
print("\nWhat the server sent, next to the output item the model saw on its next request:")
for record, call in zip(sent, calls):
    out = outputs[call.call_id]
    print(f"--- {record['tool']} (server: is_error={record['is_error']}; item: is_error={out.is_error}; "
          f"in the last request: {out.id in in_last})")
    print("  tool returned:", record["sent"][:240].replace("\n", "\n" + " " * 16))
    print("  model saw:   ", out.output[:240].replace("\n", "\n" + " " * 16))'''

VERIFY = r'''import os, subprocess
print((project / "calc" / "core.py").read_text())
env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
done = subprocess.run([sys.executable, "-m", "pytest", "-q", "--color=no", "-p", "no:cacheprovider"], cwd=project,
                      env=env, capture_output=True, text=True, timeout=120)
print("pytest, run by this notebook itself, exits with", done.returncode, "-", done.stdout.strip().splitlines()[-1])
claim(done.returncode == 0, "the fix is on disk and the test is green",
      otherwise="pytest still fails: the patch was not applied (see the approval recorded above)")'''

TABLE = r'''from IPython.display import Markdown, display
from nbagent.store import read_rollout
import sqlite3

turn_id = next(e.turn_id for e in events if e.msg.type == "turn_started")
mine = [e for e in events if e.turn_id == turn_id]
first = lambda kind: next(e.msg for e in mine if e.msg.type == kind)
started, done_msg = first("turn_started"), first("turn_completed")
begins = [e.msg for e in mine if e.msg.type == "tool_call_begin"]
ends = [e.msg for e in mine if e.msg.type == "tool_call_end"]
asked = [e.msg for e in mine if e.msg.type == "approval_requested"]
resolved = [e.msg for e in mine if e.msg.type == "approval_resolved"]
texts = [e.msg.text for e in mine if e.msg.type == "agent_message"]
mcp_tools = sorted({t.name for t in session.snapshot().tools if t.server})
replies = sum(1 for e in mine if e.msg.type == "token_count")   # one per model reply

rollout = work / "home" / "threads" / f"{session.snapshot().thread_id}.jsonl"
lines, _ = read_rollout(rollout)
db = sqlite3.connect(f"file:{work / 'home' / 'state.sqlite'}?mode=ro", uri=True)
row = db.execute("SELECT turns, items FROM threads WHERE id = ?", (session.snapshot().thread_id,)).fetchone()
db.close()

def calls_line():
    parts = []
    for b, e in zip(begins, ends):
        gate = next((f"asked, {r.decision} by {r.by}" for r in resolved if r.call_id == b.call_id), "no ask (read-only, trusted)")
        parts.append(f"`{b.tool}` → `{b.server}/{b.raw_tool}`: {gate}; {e.status} in {e.duration_ms:.0f} ms")
    return "<br>".join(parts)

rows = [
    ("User input", f"“{started.prompt}”",
     f"thread `{session.snapshot().thread_id}` bound; entry `{started.entry}`, policy `{started.policy}`, "
     f"cwd `{session.snapshot().cwd}`; MCP tools offered: {', '.join(f'`{t}`' for t in mcp_tools)}"),
    ("Model understanding", f"“{texts[0]}”",
     f"{replies} model requests in this turn; the last: {len(last['items'])} items of history, "
     f"{len(last['tools'])} tools, {len(last['instructions'])} chars of instructions"),
    ("Tool call", ", ".join(f"`{b.raw_tool}`" for b in begins), calls_line()),
    ("Result backfill", "the model sees the command output",
     f"{len(ends)} `function_call_output` items, each tied to its `call_id` "
     f"({', '.join(e.status for e in ends)}); the last request carries every one of them: "
     f"{all(outputs[e.call_id].id in in_last for e in ends)}"),
    ("Completion", f"“{done_msg.last_message}”",
     f"rollout: {len(lines)} lines, turn record `{[l.status for l in lines if l.type == 'turn'][-1]}`; "
     f"index row: turns={row[0]}, items={row[1]}; events seq {mine[0].seq}–{mine[-1].seq}, "
     f"ending in `{mine[-1].msg.type}`"),
]
table = "| stage | surface action | what the runtime really handled (this run) |\n|---|---|---|\n"
table += "\n".join(f"| {a} | {b} | {c} |" for a, b, c in rows)
display(Markdown(table))'''

CODEX = """## Where this lives in Codex

In openai/codex at commit `608b8b1cc6ce` (each link names the commit and the lines):

* [`codex-rs/core/src/tools/handlers/mcp.rs` L226-L250](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/tools/handlers/mcp.rs#L226-L250): the handler for one MCP tool builds the spec the model sees from the
  server's tool. On a call ([L116-L156](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/tools/handlers/mcp.rs#L116-L156)), it hands `handle_mcp_tool_call` the raw server name
  and the tool's own name, not the model-visible one.
* [`codex-rs/core/src/mcp_tool_call.rs` L106-L292](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/mcp_tool_call.rs#L106-L292): `handle_mcp_tool_call` runs the "tool call" row of the table. It parses
  the arguments, emits `McpToolCallBegin`, asks for approval ([L1156-L1329](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/mcp_tool_call.rs#L1156-L1329): accept, accept for
  the session, decline, cancel), calls the server, makes the result fit the model, and emits
  `McpToolCallEnd` with the duration.
* [`codex-rs/core/src/session/mcp.rs` L290-L303](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/session/mcp.rs#L290-L303): the session side. `Session::call_tool` reaches the server through the
  connection manager ([`codex-rs/codex-mcp/src/connection_manager.rs` L632-L668](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/connection_manager.rs#L632-L668)). A server's request during a call, such as an
  elicitation ([L85-L198](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/session/mcp.rs#L85-L198)), becomes an event the front end answers."""

NBAGENT = """## Where this lives in nbagent

* `nbagent/examples/workspace_server.py`: the MCP server used here. It has three tools, confines
  every path to its root, uses no shell, and records what it sends back. A failing test run is a
  tool error that carries pytest's report.
* `nbagent/mcp/identity.py`: the model-visible name `mcp__workspace__apply_patch` for the raw
  identity `(workspace, apply_patch)`.
* `nbagent/core/tool_call.py`: `execute_call` runs resolve, approve, run and finish. It emits
  `tool_call_begin`, asks the desk, calls the provider, caps the output, then emits
  `tool_call_end` and records the `function_call_output` item.
* `nbagent/core/approval.py`: `known_safe` (read-only hints on a trusted server run without
  asking) and the desk that records every decision as an `ApprovalRecord` before the call runs.
* `nbagent/core/turn.py`: the loop of requests and calls. `nbagent/models/replay.py`: the
  scripted model, which branches on what happened to the previous call.
* `nbagent/notebook/approval.py`: the approval panel you saw. It sends the same
  `ApprovalDecision` op as the autopilot does here.
* `nbagent/store/rollout.py` and `nbagent/store/index.py`: the record behind the last row."""

CHECK = r'''def refuse(why):
    raise AssertionError(f"Not yet: {why}")

first_run = next(o.output for o in outputs.values() if o.is_error)   # the run_tests that failed
summary = lambda *lines: "\n".join([".F" + " " * 70 + "[100%]", "=== short test summary info ===", *lines])
cases = [
    ("this run's report", first_run, ["tests/test_core.py::test_add"]),
    ("a green run", ".." + " " * 70 + "[100%]\n2 passed in 0.01s", []),
    ("two failures", summary("FAILED tests/test_b.py::test_zero - ZeroDivisionError: division by zero",
                             "FAILED tests/test_a.py::TestParse::test_empty - assert None == ''",
                             "2 failed, 3 passed in 0.05s"),
     ["tests/test_a.py::TestParse::test_empty", "tests/test_b.py::test_zero"]),
    ("a parametrized test", summary("FAILED tests/test_m.py::test_mul[2-3] - assert 5 == 6",
                                    "FAILED tests/test_m.py::test_mul[0-1] - assert 1 == 0", "2 failed in 0.02s"),
     ["tests/test_m.py::test_mul[0-1]", "tests/test_m.py::test_mul[2-3]"]),
    ("a failure with no message", summary("FAILED tests/test_io.py::test_read", "1 failed in 0.01s"),
     ["tests/test_io.py::test_read"]),
]

def reads_reports(fn):
    if not callable(fn):
        refuse(f"`answer` is a {type(fn).__name__}; it should be the function itself (`answer = failing`, no call)")
    for name, report, wanted in cases:
        try:
            got = fn(report)
        except Exception as exc:
            refuse(f"on {name} it raised {type(exc).__name__}: {exc} (the report is one string; split it into lines)")
        if not isinstance(got, list) or not all(isinstance(t, str) for t in got):
            refuse(f"on {name} it returned {type(got).__name__}; return a list of test id strings")
        if got != wanted:
            if sorted(set(got)) == wanted:
                refuse(f"on {name} the right tests, but return each once, sorted")
            if any(" - " in t or t.startswith("FAILED") for t in got):
                refuse(f"on {name} an id still carries the rest of its line: keep only `path::name`")
            refuse(f"on {name} a failing test is missing or extra: pytest's short summary names each failure once, "
                   "on a line of its own")
    return True

check(answer, reads_reports,
      hint="see the message above",
      why="the report is data the model reads like any tool output; nbagent passes it on unchanged (is_error "
          "travels with it), and the model's next step, reading calc/core.py, came from this line.")'''

ANSWER = (
    "answer = lambda report: sorted({line.split()[1] for line in report.splitlines()"
    " if line.startswith('FAILED ')})"
)
WRONG_ANSWER = "answer = lambda report: [line for line in report.splitlines() if line.startswith('FAILED ')]"

CELLS: list[tuple[CellKind, str]] = [
    ("markdown", """# 08 · Fix a failing test, end to end

The lesson's running example: "fix this failing test". The user is not waiting for an answer.
They are starting a **local task**. The runtime decides what history the turn sees, which tools
the model may use, which calls need approval, how tool output goes back into the context, what is
saved, and when the UI shows progress. This notebook runs that task for real and then fills in
the lesson's table from the recorded events."""),
    ("markdown", """## The problem this boundary solves

The model only *proposes* actions: run this command, read that file, change this line. The local
runtime routes each action to the right tool. It executes reads freely, stops a write until a
person decides, and turns every result into an item the model reads next. It records all of this
so the task can be audited and resumed. Without that boundary, a model's guess would turn
straight into a change on disk.

Setup: a scripted model (`replay:`, branching on each call's outcome, so its text always matches
what happened) and the example workspace MCP server over stdio, rooted at `project/`. The cell
also writes a package with a bug into `project/`."""),
    ("code", SETUP),
    ("code", "%load_ext nbagent"),
    ("markdown", """With the autopilot on (the `AUTOPILOT` cell above), the cell below sends the same
`ApprovalDecision` op the *Approve* button sends; with it off, you click the approval panel. The
tap keeps every event for the analysis that follows; what the model was sent, nbagent's inspector
shows (`%agent inspect request`)."""),
    ("code", TAPS),
    ("markdown", """## A live demonstration: the agent fixes the test

Watch the cards. `run_tests` and `read_file` are read-only on a trusted server, so they run
without asking. `apply_patch` is marked destructive, so an approval panel shows the proposed
`old` → `new` edit as editable JSON, and the call waits for a decision."""),
    ("code", "%%agent --wait\nThe tests of this project fail. Fix the failing test."),
    ("markdown", """The turn as nbagent's inspector shows it: each event with its `seq` and the
milliseconds since the turn began. The calls, the approval asked and resolved in between, and the
one terminal event."""),
    ("code", "%agent inspect turn"),
    ("markdown", """Each call of the turn, from the thread's items: the raw tool and arguments, how it
ended, and the recorded approval decision when there was one. The first `run_tests` ended in an
error (pytest exited 1), which is the outcome the script branched on."""),
    ("code", CALLS),
    ("markdown", """## What the model saw vs what the server sent

The server knows its tools as `run_tests`, `read_file` and `apply_patch`. The model knows them by
names nbagent gives them, with the schema nbagent exposes. Routing, approvals and the rollout
always use the raw identity. For each call, here is the server's own record of what its tool
returned, next to the `function_call_output` the model read on its next request. The one
difference is on the failed run. The tool raised an error, and the MCP SDK inside the server
prefixed `Error executing tool run_tests:` as it sent that error over the wire as an error
result. The model reads the text, and `is_error` travels with it."""),
    ("code", SAW),
    ("markdown", """The fix is on disk, and the test is green even when pytest is run outside the
agent:"""),
    ("code", VERIFY),
    ("markdown", """## The lesson's table, filled from this run

Each cell of the table below is computed from what this turn recorded: its events (`seq`, type,
payload), the model requests, the thread's items, the rollout and the index row. None of it is
typed in by hand. Run the turn again and deny the patch, and the table changes with the run."""),
    ("code", TABLE),
    ("markdown", CODEX),
    ("markdown", NBAGENT),
    ("markdown", """## Exercise

The agent's first step was to read pytest's report and find the failing test. Write that step:
`failing(report)` takes the text `pytest -q` prints and returns the ids of the tests that failed
(`path::name`, as pytest's short summary names them), sorted, each once; an empty list when all
passed. The check runs it on this run's first `run_tests` output, then on reports you have not
seen."""),
    ("code", "def failing(report):\n    ...\n\nanswer = ..."),
    ("code", CHECK),
]

WALKTHROUGH = Walkthrough(
    name="08-fix-a-failing-test",
    title="Fix a failing test, end to end",
    cells=CELLS,
    answer=ANSWER,
    wrong_answer=WRONG_ANSWER,
    timeout=120,
    files=("08-fix-a-failing-test.json",),
)
