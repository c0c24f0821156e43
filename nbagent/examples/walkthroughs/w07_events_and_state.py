"""Walkthrough 07: a turn as the events it makes, and the state that outlives the kernel.

The four steps of a turn (entry normalisation, state assembly, event flow, result backfill) are
shown as the real events of one turn; then the thread / turn / item hierarchy, the rollout beside
its SQLite index, a resume from another process and a torn rollout line repaired on load.
"""

from __future__ import annotations

from nbagent.examples.cells import CellKind
from nbagent.examples.walkthroughs import Walkthrough

SETUP = r'''import json, sys
from nbagent.examples.walkthroughs.kit import autopilot, check, data, workspace

CONFIG = f"""
model = "replay:{data('07-events-and-state.json')}"   # a scripted model, offline
approval_policy = "on-request"

[mcp_servers.workspace]                                 # a real MCP server over stdio
command = $python
args = ["-m", "nbagent.examples.workspace_server", "--root", "project", "--record", "server-record.jsonl"]
trusted = true                                          # its read-only hints may skip approval
"""
work = workspace("07-events-and-state", CONFIG)
(work / "project").mkdir(exist_ok=True)
(work / "project" / "README.md").write_text("# calc\n\n`calc.add(a, b)` adds two numbers.\n")
(work / "server-record.jsonl").unlink(missing_ok=True)'''

TAPS = r'''import nbagent.notebook as nb
from nbagent.protocol import ApprovalDecision, NewThread, ResumeThread

session = await nb.ready()
autopilot(session, lambda msg: ApprovalDecision(call_id=msg.call_id, decision="approve")
          if msg.type == "approval_requested" else None, on=AUTOPILOT)

events = []                          # every event from now on, exactly as front ends get them
session.subscribe(events.append)
print("thread:", session.snapshot().thread_id, "| model:", session.model_client().label)'''

EVENT_TABLE = r'''def show_events(turn_id):
    """One row per event of a turn (runs of deltas folded): seq, ms since the turn began, type."""
    mine = [e for e in events if e.turn_id == turn_id]
    start, rows = mine[0].at, []
    for e in mine:
        if rows and rows[-1][2] == e.msg.type and e.msg.type.endswith("_delta"):
            rows[-1][3] += 1
            continue
        detail = {"turn_started": lambda m: f"entry={m.entry} prompt={m.prompt!r}",
                  "tool_call_begin": lambda m: f"{m.tool} = {m.server}/{m.raw_tool} {m.arguments}",
                  "tool_call_end": lambda m: f"status={m.status} {m.duration_ms:.0f} ms",
                  "agent_message": lambda m: repr(m.text[:60])}.get(e.msg.type, lambda m: "")(e.msg)
        rows.append([e.seq, (e.at - start) * 1000, e.msg.type, 1, detail])
    for seq, ms, kind, n, detail in rows:
        print(f"{seq:>4}  {ms:7.1f} ms  {kind + (f' x{n}' if n > 1 else ''):<26} {detail}")

first_turn = next(e.turn_id for e in events if e.msg.type == "turn_started")
show_events(first_turn)'''

ENTRY = r'''result = await session.run("Say where this turn came from.", entry="python")
for e in events:
    if e.msg.type == "turn_started":
        print(f"seq {e.seq:>3}  turn {e.turn_id}  entry={e.msg.entry:<7} model={e.msg.model.split('/')[-1]}  policy={e.msg.policy}")
print("second turn:", result.status, "-", result.text)'''

ASSEMBLY = r'''from IPython.utils.capture import capture_output
from nbagent.protocol import FunctionCallOutput
with capture_output() as shown:                  # the same view, as JSON for this code to read
    get_ipython().run_line_magic("agent", "inspect request --json")
last = json.loads(shown.stdout)
print(f"{len(last['instructions'])} chars of instructions, {len(last['items'])} items, "
      f"tools {[t['name'] for t in last['tools']]}")
for item in last["items"]:
    print(f"    {item['type']:<22} {item['id']}")

# The request is a projection of the thread: its items are the thread's items, in order.
print("\nthe request's items are the thread's items:",
      [i["id"] for i in last["items"]] == [i.id for i in session.snapshot().items[:len(last["items"])]])'''

SAW = r'''from nbagent.models.responses import to_input_items

sent = [json.loads(line) for line in (work / "server-record.jsonl").read_text().splitlines()]
print("What the server sent (its own record of the execution):")
print("   ", json.dumps(sent[0], indent=None)[:300])

output = next(i for i in session.snapshot().items if isinstance(i, FunctionCallOutput))
print("\nThe item the runtime backfilled into the thread:")
print("   ", output.model_dump_json(include={"type", "call_id", "output", "is_error", "status", "duration_ms"}))

carried = [i for i in session.snapshot().items if i.id in {j["id"] for j in last["items"]}]
wire = [w for w in to_input_items(carried) if w.get("call_id") == output.call_id]
print("\nWhat the model saw (the last request above, on the Responses wire):")
for w in wire:
    print("   ", json.dumps(w)[:300])'''

HIERARCHY = r'''from nbagent.store import read_rollout
rollout = work / "home" / "threads" / f"{session.snapshot().thread_id}.jsonl"
lines, warnings = read_rollout(rollout)
meta = lines[0]
print(f"thread {meta.thread_id}  (cwd {meta.cwd})")
for line in lines[1:]:
    if line.type == "turn":
        print(f"  turn {line.turn_id}  {line.status:<9} entry={line.entry}")
    elif line.type == "item":
        item = line.item
        what = getattr(item, "text", None) or getattr(item, "name", None) or getattr(item, "output", "")
        print(f"      item {item.type:<22} {str(what)[:50]!r}")'''

SIDE_BY_SIDE = r'''import sqlite3
raw = rollout.read_text().splitlines()
print(f"{rollout.relative_to(work)}: {len(raw)} lines, {rollout.stat().st_size} bytes. The first three:")
for text in raw[:3]:
    print("   ", text.replace(str(data("")), "…")[:160])   # … : the walkthroughs' folder

db = sqlite3.connect(f"file:{work / 'home' / 'state.sqlite'}?mode=ro", uri=True)   # read-only
db.row_factory = sqlite3.Row
row = dict(db.execute("SELECT * FROM threads WHERE id = ?", (session.snapshot().thread_id,)).fetchone())
db.close()
print("\nstate.sqlite, its row for this thread:")
for key in ("id", "turns", "items", "first_prompt", "last_prompt", "rollout_path"):
    print(f"    {key:<13} {row[key]}")
derived = {"turns": sum(1 for l in lines if l.type == "turn" and l.status == "started"),
           "items": sum(1 for l in lines if l.type == "item")}
print("\ncounted from the rollout:", derived, "| the index agrees:", all(row[k] == v for k, v in derived.items()))'''

RESUME = r'''import subprocess
thread_id = session.snapshot().thread_id
await session.perform(NewThread())          # this kernel lets go of the thread (and its lock)

cli = [sys.executable, "-m", "nbagent.cli", "resume", thread_id, "Read the README again.",
       "-m", f"replay:{data('07-resume.json')}", "--json"]
done = subprocess.run(cli, cwd=work, capture_output=True, text=True, timeout=120)
print("nbagent resume exited with", done.returncode)
other = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
for e in other:
    if e["type"] in ("session_configured", "turn_started", "tool_call_end", "turn_completed"):
        extra = {"session_configured": f"resumed_items={e.get('resumed_items')}",
                 "tool_call_end": e.get("tool", "")}.get(e["type"], "")
        print(f"   seq {e['seq']:>3}  {e['type']:<20} {extra}")'''

AFTER_RESUME = r'''lines, _ = read_rollout(rollout)
print("the turns of this thread, from two processes:")
for line in lines:
    if line.type == "turn" and line.status == "started":
        print(f"   turn {line.turn_id}  entry={line.entry}")'''

TEAR = r'''from nbagent.store import ABORTED_OUTPUT
# Simulate a crash mid-write: keep the file up to the middle of the last call's output line.
raw_lines = rollout.read_bytes().split(b"\n")
cut = max(i for i, text in enumerate(raw_lines) if b'"function_call_output"' in text)
middle = raw_lines[cut].index(b'"output":') + 24                # a few bytes into the output
rollout.write_bytes(b"\n".join(raw_lines[:cut]) + b"\n" + raw_lines[cut][:middle])
print(f"cut line {cut + 1} inside its output; the file now ends with: ...{rollout.read_bytes()[-50:]}")

lines, warnings = read_rollout(rollout)
print("\nloading it:", warnings)'''

REPAIR = r'''seen = len(events)
await session.perform(ResumeThread(thread=thread_id))       # the kernel takes the thread back
for e in events[seen:]:
    if e.msg.type == "warning":
        print("warning event:", e.msg.message)
from nbagent.protocol.rollout import RolloutLineAdapter
tail = rollout.read_bytes().split(b"\n")
print(f"\nthe file after the resume (it ends with a newline: {tail[-1] == b''}), its last lines:")
for n, text in enumerate(tail[-4:-1], len(tail) - 3):
    try:
        line = RolloutLineAdapter.validate_json(text)
    except ValueError:
        print(f"   line {n}: the torn half-line, now on a line of its own (skipped on every read)")
        continue
    what = (f"item {line.item.type} status={line.item.status} {line.item.output!r}" if line.type == "item"
            else f"turn {line.status} reason={line.reason!r}")
    print(f"   line {n}: {what}")
repaired = [i for i in session.snapshot().items if isinstance(i, FunctionCallOutput) and i.output == ABORTED_OUTPUT]
print("\nrepaired call:", [(i.call_id, i.status) for i in repaired])'''

CODEX = """## Where this lives in Codex

In openai/codex at commit `608b8b1cc6ce` (each link names the commit and the lines):

* [`codex-rs/core/src/mcp_tool_call.rs` L106-L292](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/mcp_tool_call.rs#L106-L292): `handle_mcp_tool_call` is event flow in miniature. It
  emits `McpToolCallBegin` ([L849-L914](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/mcp_tool_call.rs#L849-L914)), asks for approval when the tool's mode says so, calls
  the server, makes the result fit the model, and emits `McpToolCallEnd` with the duration and
  result. The caller then writes that result into the history (result backfill).
* [`codex-rs/core/src/session/mcp.rs` L85-L198](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/session/mcp.rs#L85-L198): the session's side of MCP, where server requests such as elicitations
  become session events and wait for the user.
* [`codex-rs/mcp-server/src/codex_tool_runner.rs` L53-L141](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/mcp-server/src/codex_tool_runner.rs#L53-L141): Codex run as an MCP server. The caller's prompt becomes the same
  `Op::UserInput` submission a terminal sends, which is entry normalisation. In the event loop
  ([L194-L411](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/mcp-server/src/codex_tool_runner.rs#L194-L411)) every event of the session is forwarded to the caller as a notification, and
  the `tools/call` is answered with the last agent message once the task completes. The same event
  stream feeds a different front end, which is why events are a stable API and not UI calls.
* [`codex-rs/mcp-server/src/message_processor.rs` L346-L400](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/mcp-server/src/message_processor.rs#L346-L400): receives that front end's JSON-RPC request and hands a call of the `codex`
  tool to the runner.

How rollouts and the SQLite state database are stored is outside the lesson's files. In Codex they
are their own crates. Here, `nbagent/store/` plays that part."""

NBAGENT = """## Where this lives in nbagent

* `nbagent/core/turn.py`: `run_turn`, the four steps. It writes the `TurnRecord`, emits
  `turn_started`, records the `UserMessage`, then loops (`_sample` builds the `ModelRequest` from
  `thread.context`, `_run_calls` routes the calls and backfills their outputs) and ends with
  exactly one terminal event.
* `nbagent/core/bus.py`: the one event stream. It numbers each event (`seq`), stamps the thread,
  turn and time, and fans the event out to `subscribe` callbacks and `events()` iterators.
* `nbagent/protocol/events.py`, `nbagent/protocol/items.py`, `nbagent/protocol/rollout.py`: the
  vocabulary. Events are what happened, for front ends, and are not persisted. Items are facts of
  the thread. Rollout lines are items plus the turn and thread records.
* `nbagent/core/thread.py`: `record` (disk first, then memory) and `resume` (which repairs open
  calls and the open turn).
* `nbagent/store/rollout.py` (the append-only JSONL, `read_rollout` that skips a torn line,
  `RolloutWriter` that ends a torn tail before appending), `nbagent/store/index.py` (the SQLite
  row, derived from the rollout by `ThreadStats`), `nbagent/store/threads.py` (the two together,
  the index rebuilt when missing or corrupt), `nbagent/store/repair.py` (the "aborted" outputs).
* `nbagent/cli.py`: `nbagent resume`, the other process above."""

CHECK = r'''from nbagent.protocol import Event, ToolCallBegin, ToolCallEnd, WarningEvent

def refuse(why):
    raise AssertionError(f"Not yet: {why}")

def folds_right(fn):
    if not callable(fn):
        refuse(f"`answer` is a {type(fn).__name__}; it should be the function itself (`answer = ended`, no call)")
    begin = lambda c: Event(turn_id="t", msg=ToolCallBegin(call_id=c, tool="mcp__w__read_file"))
    end = lambda c, s: Event(turn_id="t", msg=ToolCallEnd(call_id=c, tool="mcp__w__read_file", output="",
                                                        status=s, is_error=s != "completed"))
    note = Event(turn_id="t", msg=WarningEvent(message="a warning"))
    ours = [e for e in events if e.turn_id == first_turn]
    cases = [
        ("this run's first turn", ours, {e.msg.call_id: e.msg.status for e in ours if e.msg.type == "tool_call_end"}),
        ("no events", [], {}),
        ("a call still running", [begin("a"), note], {"a": "running"}),
        ("two calls ending out of order", [begin("a"), begin("b"), end("b", "denied"), note, end("a", "completed")],
         {"a": "completed", "b": "denied"}),
        ("a failed call and a running one", [begin("x"), end("x", "failed"), begin("y")], {"x": "failed", "y": "running"}),
    ]
    for name, given, wanted in cases:
        try:
            got = fn(list(given))
        except Exception as exc:
            refuse(f"on {name} it raised {type(exc).__name__}: {exc} (every event has .msg.type; "
                   "only tool_call_begin and tool_call_end have .msg.call_id, and only the end has .msg.status)")
        if not isinstance(got, dict):
            refuse(f"it returned {type(got).__name__}; return a dict {{call_id: status}}")
        if got != wanted:
            if set(got) != set(wanted):
                refuse(f"on {name} the keys are off: one entry per call that began, keyed by its call_id")
            refuse(f"on {name} a status is off: a call's status is its end's .msg.status, or 'running' before it ends")
    return True

check(answer, folds_right,
      hint="see the message above",
      why="the events are the only interface a front end needs: a card is 'running' from tool_call_begin "
          "until its tool_call_end, and shows that end's status. The turn itself works the same way: "
          "exactly one terminal event closes it.")'''

ANSWER = (
    "answer = lambda events: {e.msg.call_id: getattr(e.msg, 'status', 'running') for e in events"
    " if e.msg.type in ('tool_call_begin', 'tool_call_end')}"
)
WRONG_ANSWER = "answer = lambda events: {e.msg.call_id: e.msg.status for e in events if e.msg.type == 'tool_call_end'}"

CELLS: list[tuple[CellKind, str]] = [
    ("markdown", """# 07 · Events and state: a turn, its stream, its record

A coding agent's turn is a local task, not a single answer. It reads history, calls tools, waits
for people, and may be cut off at any moment. The lesson splits a turn into four steps:
**entry normalisation**, **state assembly**, **event flow** and **result backfill**. This notebook
shows each one as the real events and records of a turn in this kernel."""),
    ("markdown", """## The problem this boundary solves

Many front ends drive the same turn: a notebook cell, a Python script, the CLI, an MCP client.
Many consumers read it: the widgets, the rollout, the index, a remote caller. The turn has to
survive the process that ran it. If the UI drove the turn directly, each front end would need its
own lifecycle, and a crash would lose what was done. nbagent uses two separate channels instead:

* **ops in, events out**: every front end turns its input into a `UserTurn` op, and everything
  the turn does comes out as numbered events on one stream;
* **facts on disk**: items and turn records go to an append-only rollout file, *before* memory,
  with a SQLite index derived from it for finding threads.

Setup: a scripted model (`replay:`), plus the example workspace MCP server over stdio. The server
records what it sends back."""),
    ("code", SETUP),
    ("code", "%load_ext nbagent"),
    ("markdown", """One tap, plain Python: `session.subscribe` receives every event the front ends
receive, and does not change what the runtime does. What the model was sent needs no tap:
`%agent inspect request` shows the last request nbagent built, as the model client was given
it."""),
    ("code", TAPS),
    ("markdown", """## A live demonstration: one turn, as its events

The cell body is the goal. `--wait` keeps the cell running until the turn ends."""),
    ("code", "%%agent --wait\nWhat does README.md say?"),
    ("markdown", """Here is every event of that turn: `seq` (per session), milliseconds since
`turn_started`, and `type`. Word-by-word deltas are folded into one row. The lesson's event flow
is visible in this table. The model streams, a tool call begins and ends, the model streams again
after the output is backfilled, and exactly one terminal event (`turn_completed`) closes the
turn."""),
    ("code", EVENT_TABLE),
    ("markdown", """### Step 1: entry normalisation

The magic submitted `UserTurn(entry="magic")`. Python can submit the same op with
`session.run`. The core never knows which front end it serves. It only records the `entry` that
started the turn."""),
    ("code", ENTRY),
    ("markdown", """### Step 2: state assembly

Each model request is built from state: the instructions (base, config, `AGENTS.md`, servers'
instructions), the thread's items as the context view sees them, and the tool catalogue.
"The model request is a projection of runtime state." `%agent inspect request` shows the last
one, the second turn's: it carries the first turn's call and output too, because they are items
of the thread (add `--json` for a program, as the cell after it does)."""),
    ("code", "%agent inspect request"),
    ("code", ASSEMBLY),
    ("markdown", """## What the model saw vs what the server sent

### Steps 3 and 4: event flow and result backfill

The server returned text. The runtime announced it (`tool_call_end`), wrapped it as a
`function_call_output` item tied to the call's `call_id`, recorded it, and sent it on the next
request. Here are all three, from the server's own record, the thread, and the wire form of the
request:"""),
    ("code", SAW),
    ("markdown", """## Thread, turn, item

A **thread** is one conversation, kept in one file. A **turn** is one goal, from `started` to
exactly one of `completed`, `aborted` or `failed`. An **item** is one fact: a message, a call, an
output, an approval. Events do not appear here, because they are for front ends. The rollout
stores only the items and turn records:"""),
    ("code", HIERARCHY),
    ("markdown", """## The rollout and the SQLite index, side by side

The rollout (`home/threads/<id>.jsonl`) holds the facts, one JSON line each, and is only ever
appended to. The index (`home/state.sqlite`) holds one row per thread for listing and resolving
names. Every column is derived from the rollout, so losing the index costs a rebuild and never
any data. This is the lesson's point about keeping the log and the index separate: facts can be
replayed, and queries can be optimised."""),
    ("code", SIDE_BY_SIDE),
    ("markdown", """## Resume after a kernel restart

A kernel restart ends this process, and only the files remain. Restarting the kernel would also
end this notebook, so the cell below stands in for it honestly. The kernel lets go of the thread,
and a **separate process**, `nbagent resume THREAD GOAL`, continues it over the same
`$NBAGENT_HOME`. That process has no memory of this one. It rebuilds the thread from the rollout.
(A thread has one writer at a time: while this kernel held it, the other process would have
waited, then refused, naming this kernel's pid.)"""),
    ("code", RESUME),
    ("code", AFTER_RESUME),
    ("markdown", """## A torn last line, repaired on load

The rollout is written one whole line at a time, with no fsync per line, so a crash or power cut
can leave half a line at the end. The next cell simulates that: it cuts the file in the middle of
the last `function_call_output` line, as if the other process died while writing it. The reader
skips the torn line with a warning that names the file and line. The rest of the file is still the
thread."""),
    ("code", TEAR),
    ("markdown", """Resuming repairs what the crash left. The writer first ends the torn tail with a
newline, so the next append is a whole line. The call that lost its output gets an "aborted" output
(a model API rejects a call without one), and the turn that never ended gets an `aborted` record.
Each repair is appended to the file as a recorded fact."""),
    ("code", REPAIR),
    ("markdown", CODEX),
    ("markdown", NBAGENT),
    ("markdown", """## Exercise

A front end never asks the runtime what state a turn is in: it folds the events it receives.
Write that fold for tool calls. `ended(events)` takes a list of events (each has `.msg`, and
`.msg.type` says which kind) and returns a dict `{call_id: status}` with one entry per call that
**began**: the `status` of its `tool_call_end`, or `"running"` while no end has arrived. Other
events are ignored. The check runs it on this run's first turn and on event lists it builds."""),
    ("code", "def ended(events):\n    ...\n\nanswer = ..."),
    ("code", CHECK),
]

WALKTHROUGH = Walkthrough(
    name="07-events-and-state",
    title="Events and state: a turn, its stream, its record",
    cells=CELLS,
    answer=ANSWER,
    wrong_answer=WRONG_ANSWER,
    timeout=120,
    files=("07-events-and-state.json", "07-resume.json"),
)
