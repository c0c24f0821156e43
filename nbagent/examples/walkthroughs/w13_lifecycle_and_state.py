"""13-lifecycle-and-state: the connection lifecycle with real servers (one that cannot start, one
that crashes mid-session and is restarted, one whose ``tools/list_changed`` grows the catalogue),
what one model request is assembled from (config, permissions, model capabilities, workspace,
``AGENTS.md``, notebook context) and the tokens it cost, and nbagent in the server role, its
approval forwarded to an MCP SDK client as an elicitation carrying the diff."""

from __future__ import annotations

from nbagent.examples.cells import CellKind
from nbagent.examples.walkthroughs import Walkthrough

SETUP = r'''import asyncio, json, os, sys
from nbagent.examples.walkthroughs.kit import autopilot, check, claim, data, workspace

CONFIG = f"""
model = "replay:{data('13-lifecycle-and-state.json')}"   # a scripted model, offline
approval_policy = "on-request"          # permissions: when a person is asked
sandbox_mode = "workspace-write"        # permissions: what a command and a server may touch
model_context_window = 32768            # a model capability: how much the model can read

[mcp_servers.life]                      # starts, crashes when asked, learns a tool
command = $python
args = ["-m", "nbagent.examples.lifecycle_server"]

[mcp_servers.broken]                    # the same program, missing a setting: it refuses to start
command = $python
args = ["-m", "nbagent.examples.lifecycle_server", "--refuse"]

[mcp_servers.missing]                   # a command that does not exist
command = "no-such-mcp-server"
"""
work = workspace("13-lifecycle-and-state", CONFIG)
(work / "AGENTS.md").write_text("Report temperatures in Celsius.\n")   # the workspace's instructions'''

READY = r'''import nbagent.notebook as nb
from nbagent.notebook.extension import get_agent
from nbagent.protocol import ApprovalDecision, ListMcpTools

session = await nb.ready()
await session.perform(ListMcpTools())          # every server has started, or failed to

def answer(msg):
    """What a person would click, when the autopilot is on: approve."""
    if msg.type == "approval_requested":
        return ApprovalDecision(call_id=msg.call_id, decision="approve")
print("autopilot:", autopilot(session, answer, on=AUTOPILOT))

events = []                                    # every event from now on, as the widgets get them
session.subscribe(events.append)
of_type = lambda kind: [e.msg for e in events if e.msg.type == kind]

async def background(line):
    """Run `%agent LINE` and wait for the work it started (%agent runs it in the background)."""
    running = set(get_agent().tasks)
    get_ipython().run_line_magic("agent", line)
    await asyncio.gather(*(get_agent().tasks - running))

for name, status in session.snapshot().servers.items():
    print(f"{name:8} {status.state:7} tools={status.tools} error={status.error!r}")'''

FAILED = r'''await background("mcp restart broken")          # try again, and watch the events this time
await background("mcp restart missing")
for update in of_type("mcp_startup_update"):
    print(f"mcp_startup_update {update.server:8} {update.status:8} error={update.error!r}")
    if update.stderr_tail:
        print(f"{'':28}stderr_tail={update.stderr_tail!r}")
failed = [u for u in of_type("mcp_startup_update") if u.status == "failed"]
claim({u.server for u in failed} == {"broken", "missing"} and "STATION_KEY" in (failed[0].stderr_tail or ""),
      "each failed start is an event naming the server and why, with the server's last stderr lines",
      otherwise=f"the failed starts were {[(u.server, u.error) for u in failed]}")'''

CRASH_CHECK = r'''end = of_type("tool_call_end")[-1]
print(f"tool_call_end {end.tool}: status={end.status}, is_error={end.is_error}")
print("the model read:", end.output[:300])
life = session.snapshot().servers["life"]
print(f"\nlife is now: {life.state}, error={life.error!r}\n  stderr_tail={life.stderr_tail!r}")
claim(life.state != "ready" and end.is_error, "the crash ended the call with an error and left the server down, not the session",
      otherwise=f"the server is {life.state} and the call {end.status}"
                f"{' (nobody approved it, so it never ran)' if end.status == 'denied' else ''}")'''

RESTART = r'''seen = len(events)
await background("mcp restart life")
for update in [e.msg for e in events[seen:] if e.msg.type == "mcp_startup_update"]:
    print(f"mcp_startup_update {update.server} {update.status} tools={update.tools} protocol={update.protocol_version}")
claim(session.snapshot().servers["life"].state == "ready", "after `%agent mcp restart life` the server is ready again",
      otherwise=f"it is {session.snapshot().servers['life'].state}")'''

CHANGED = r'''async def until(holds, seconds=10):
    """Wait for a condition the session reaches by itself (the re-list after the notification)."""
    for _ in range(int(seconds * 20)):
        if holds():
            return True
        await asyncio.sleep(0.05)
    return holds()

before = sorted(t.raw_name for t in TOOLS_BEFORE)
await until(lambda: of_type("mcp_tools_changed"))
after = sorted(t.raw_name for t in session.snapshot().tools if t.server == "life")
for changed in of_type("mcp_tools_changed"):
    print(f"mcp_tools_changed server={changed.server} tools={changed.tools}")
print("life's tools before:", before)
print("life's tools after: ", after)
claim(set(after) - set(before) == {"forecast"}, "the server's tools/list_changed made nbagent re-list, and the catalogue grew by `forecast`",
      otherwise=f"the catalogue went from {before} to {after}")'''

ASSEMBLED = r'''from IPython.utils.capture import capture_output

with capture_output() as shown:
    get_ipython().run_line_magic("agent", "inspect request --json")
request = json.loads(shown.stdout)
now = session.snapshot()
text = request["instructions"]
MARKS = [("nbagent's base instructions", "You are"), ("AGENTS.md", "Report temperatures"),
         ("permissions (sandbox_mode)", "Permissions:"), ("a server's own instructions", "Instructions from MCP server"),
         ("notebook context", "Names in the kernel")]
starts = [text.index(mark) for _, mark in MARKS] + [len(text)]
print(f"instructions, {len(text)} characters, in this order:")
for (source, _), start, end in zip(MARKS, starts, starts[1:]):
    part = " / ".join(l for l in text[start:end].splitlines() if l.strip())
    if source == "notebook context":
        part = part.split(" / ")[0] + " ... " + next(l for l in text[start:].splitlines() if "STATION_CITY" in l)
    print(f"  {source:28} {part[:110]!r}")
print("tools:", [t["name"] for t in request["tools"]])
print("items:", [i["type"] for i in request["items"][-6:]], f"(the last 6 of {len(request['items'])})")
print(f"settings: policy={now.policy}, window={now.context_window}, cwd is the workspace: {now.cwd == str(work)}"
      " (the sandbox: `%agent` below)")
claim(starts == sorted(starts) and "STATION_CITY: str" in text[starts[-2]:] and "mcp__life__forecast" in {t["name"] for t in request["tools"]},
      "the request carries AGENTS.md, then the notebook context (a name's type, not its value), and the tool the server learned",
      otherwise="a part is missing from the request")'''

TOKENS = r'''for count in of_type("token_count")[-2:]:
    last, total = count.info.last_token_usage, count.info.total_token_usage
    print(f"token_count: this request in={last.input_tokens} out={last.output_tokens}; "
          f"thread total={total.total_tokens}; window={count.info.model_context_window}")
last = of_type("token_count")[-1].info
claim(last.model_context_window == 32768 and last.total_token_usage.total_tokens > 0,
      "each model reply reports its tokens and the thread's running total, against the configured window",
      otherwise=f"the last token_count was {last}")'''

CLIENT = r'''import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

station = work / "station"                 # the inner session's folder: no nbagent.toml, so no servers
station.mkdir(exist_ok=True)
(station / "station.txt").write_text("unit = F\n")
received = {"elicitations": [], "progress": [], "logs": []}

async def elicit(context, params):
    """The caller's side of an approval: here code answers; an IDE would show a form."""
    received["elicitations"].append(params)
    return types.ElicitResult(action="accept", content={"decision": "approve"})

async def progress(value, total, message):
    received["progress"].append(message)

async def log(params):
    received["logs"].append(params.data)

# `python -m nbagent.server` is `nbagent mcp-server`: nbagent itself, served over stdio.
nbagent_server = StdioServerParameters(
    command=sys.executable,
    args=["-m", "nbagent.server", "--model", f"replay:{data('13-lifecycle-inner.json')}",
          "--policy", "on-request", "--cwd", str(station)],
    env={"NBAGENT_HOME": os.environ["NBAGENT_HOME"], "PATH": os.environ.get("PATH", "")},
)
with open("nbagent-server.log", "w") as stderr:
    async with Client(stdio_client(nbagent_server, errlog=stderr), elicitation_callback=elicit,
                      logging_callback=log) as client:
        result = await client.call_tool("agent", {"prompt": "Fix the station's unit."}, progress_callback=progress)

asked = received["elicitations"][0]
print("the caller was asked (an elicitation):\n" + asked.message)
print("\nits form:", json.dumps(asked.requested_schema["properties"]["decision"]["oneOf"]))'''

CLIENT_AFTER = r'''print("progress messages the caller received:")
for message in received["progress"]:
    print("  ", message)
print("\nthe result:", result.structured_content["text"])
print("station.txt:", (station / "station.txt").read_text().strip())
claim("-unit = F" in asked.message and "+unit = C" in asked.message and (station / "station.txt").read_text() == "unit = C\n",
      "the inner approval reached the caller as an elicitation with its diff, and the caller's answer applied the patch",
      otherwise="the elicitation carried no diff, or the file was not changed")'''

CODEX = """## Where this lives in Codex

In openai/codex at commit `608b8b1cc6ce` (each link names the commit and the lines):

- [`codex-rs/codex-mcp/src/connection_manager.rs` L104-L269](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/connection_manager.rs#L104-L269) — `McpConnectionManager::new` starts every enabled server, one client
  each: a `McpStartupUpdateEvent` `Starting` per server, then `Ready`, `Cancelled` or
  `Failed { error }`, and one `McpStartupCompleteEvent` (ready, failed, cancelled) when all are
  done; nbagent's `mcp_startup_update` and `mcp_startup_complete`. [L402-L441](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/connection_manager.rs#L402-L441) `list_all_tools`:
  the catalogue a re-list rebuilds.
- [`codex-rs/codex-mcp/src/runtime.rs` L32-L90](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/runtime.rs#L32-L90) — `McpRuntimeContext`, where each server runs; [L20-L30](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/runtime.rs#L20-L30) `SandboxState`,
  the permissions a server is told in `_meta`.
- [`codex-rs/core/src/session/mcp.rs` L290-L303](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/session/mcp.rs#L290-L303) — the session's `call_tool`, the way every call reaches the manager.
- [`codex-rs/mcp-server/src/message_processor.rs` L325-L344](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/mcp-server/src/message_processor.rs#L325-L344) — `tools/call` on `codex mcp-server` dispatches to the `codex` tool,
  which starts a turn; [`codex-rs/mcp-server/src/codex_tool_runner.rs` L194-L411](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/mcp-server/src/codex_tool_runner.rs#L194-L411) — the loop over that turn's events: each goes to
  the caller as a notification, and an approval the turn needs goes to the caller as an
  elicitation.

Where nbagent differs: Codex's startup update carries the server and its status (a failure its
error text); nbagent's also carries the server's last stderr lines, its tool count and protocol
version, and the same event reports a restart. A server that crashes stays down, shown as failed
with its exit code and stderr, until a person restarts it (`%agent mcp restart`, the servers
panel, `nbagent mcp`); each stdio server runs in the sandbox `sandbox_mode` names."""

NBAGENT = """## Where this lives in nbagent

- `nbagent/mcp/manager.py`, `nbagent/mcp/connection.py` — start, crash and re-list of each
  server, and the `mcp_startup_update` / `mcp_tools_changed` events; `nbagent/core/servers.py`
  the session's side (restart, add, remove); `nbagent/notebook/commands.py` `%agent mcp restart`.
- `nbagent/core/session_config.py`, `nbagent/core/instructions.py`,
  `nbagent/config/project_docs.py` — the settings and instructions a request is built from;
  `nbagent/core/context.py` the window; `nbagent/core/usage.py` the `token_count` sums;
  `nbagent/core/inspect.py` what `%agent inspect request` shows.
- `nbagent/server/app.py`, `nbagent/server/threads.py`, `nbagent/server/asks.py`,
  `nbagent/server/forward.py` — `nbagent mcp-server`: a call of `agent` runs a turn, its approvals
  become elicitations (with the diff), its events progress and log notifications."""

EXERCISE = '''# Each `mcp_startup_update` above, as a dict (`u.model_dump()`), has a `server` and a `status`:
# "starting", "ready", "failed", "cancelled" or "stopped". Write a function that takes a list of
# such dicts, oldest first, and returns {server: (final status, restarts)}, where `restarts`
# counts the times the server was started again after its first start.
# Then set `answer` to that function.
answer = ...'''

CHECK = r'''def refuse(why):
    raise AssertionError(f"Not yet: {why}")

def folds_right(fn):
    if not callable(fn):
        refuse(f"`answer` is a {type(fn).__name__}; it should be the function itself (`answer = fold`, no call)")
    u = lambda server, status: {"server": server, "status": status, "error": None, "tools": 0}
    ours = [e.model_dump() for e in of_type("mcp_startup_update")]
    cases = [
        ([], {}),
        ([u("a", "starting"), u("a", "ready")], {"a": ("ready", 0)}),
        ([u("a", "starting"), u("b", "starting"), u("b", "failed"), u("a", "ready")],
         {"a": ("ready", 0), "b": ("failed", 0)}),
        ([u("a", "starting"), u("a", "ready"), u("a", "stopped"), u("a", "starting"), u("a", "ready"),
          u("a", "starting"), u("a", "failed")], {"a": ("failed", 2)}),
        ([u("x", "starting"), u("x", "cancelled"), u("y", "ready")], {"x": ("cancelled", 0), "y": ("ready", 0)}),
    ]
    for updates, wanted in cases:
        try:
            got = fn([dict(x) for x in updates])
        except Exception as exc:
            refuse(f"it raised {type(exc).__name__}: {exc} (each update is a dict: x['server'], x['status'])")
        if not isinstance(got, dict):
            refuse(f"it returned {type(got).__name__}; return a dict keyed by server name")
        got = {k: tuple(v) if isinstance(v, list) else v for k, v in got.items()}
        if set(got) != set(wanted):
            refuse("some server is missing or extra: every server named in the updates appears once, "
                   "even one whose first update is not `starting`")
        if {k: v[0] for k, v in got.items()} != {k: v[0] for k, v in wanted.items()}:
            refuse("a final status is wrong: a server's state is its latest update, in list order")
        if got != wanted:
            refuse("a restart count is off: the first `starting` is the start, each later one a restart")
    mine = fn(ours)
    if not isinstance(mine, dict) or set(mine) != {u["server"] for u in ours}:
        refuse("on this notebook's own updates it does not name every server they mention")
    return True

check(answer, folds_right,
      hint="see the message above",
      why="this is what `%agent mcp` and the servers panel keep per server: the state now, and how often it "
          "came back. Folding the event stream is how any front end rebuilds it, live or from a log.")'''

CELLS: list[tuple[CellKind, str]] = [
    ("markdown", """# 13 · Connection lifecycle, state assembly, and the server role

## The problem this boundary solves

An MCP server is another process: it can fail to start, die in the middle of a call, or change
its tools while the session runs. The runtime must say which, keep the session alive, and let a
person bring the server back. Then, every model request is assembled from many sources
(config, permissions, what the model can take, the workspace, `AGENTS.md`, the notebook), and a
reader should be able to see which part came from where, and what it cost in tokens. Last, the
same runtime can *be* a server: a program drives nbagent over MCP, and the approvals its turn
needs must reach that program, not a person who is not there.

Setup: a scripted model (`replay:`) and three configured servers, all real processes running
`nbagent/examples/lifecycle_server.py`, or trying to."""),
    ("code", SETUP),
    ("code", "%load_ext nbagent"),
    ("code", READY),
    ("markdown", """## 1 · The connection lifecycle

### A server that cannot start

Both bad servers failed while the session started, and the session went on without them. Restart
them and read the events: each start is a `mcp_startup_update` (Codex's name) going `starting` →
`failed`, with the error and the last lines the process wrote to stderr: the reason a person
needs, here the missing `STATION_KEY`."""),
    ("code", FAILED),
    ("markdown", """### A server that crashes mid-session

The model calls `crash`; the server process exits in the middle of the call."""),
    ("code", "%%agent --wait\nRun the station's self-test."),
    ("code", CRASH_CHECK),
    ("markdown", """### Restart

`%agent mcp restart NAME` starts it again (the servers panel's *Restart* button sends the same
op). A new process, a new handshake, the tools listed again:"""),
    ("code", RESTART),
    ("markdown", """### `tools/list_changed`: the catalogue changes

`learn` adds a tool on the server's side and sends `notifications/tools/list_changed`. nbagent
re-lists that server, rebuilds the catalogue the model is offered, and emits `mcp_tools_changed`."""),
    ("code", "TOOLS_BEFORE = [t for t in session.snapshot().tools if t.server == 'life']"),
    ("code", "%%agent --wait\nTeach the station to forecast."),
    ("code", CHANGED),
    ("markdown", """## 2 · What one request is built from

Turn on the notebook context (the model then sees this notebook's cells and the kernel's names),
leave a name in the kernel, and ask a question the new tool answers. Then read the last request
as it was sent: `%agent inspect request --json`. Its parts and their sources:

| part of the request | comes from |
|---|---|
| `instructions` | nbagent's base text; `AGENTS.md` (found from the workspace up to the project root); the permissions (`sandbox_mode`) in words; each ready server's own instructions, marked untrusted; the notebook context, read at the turn's start |
| `tools` | the built-in tools, and every ready server's catalogue |
| `items` | the thread: prompts, replies, calls, approvals, results |
| policy, sandbox | `nbagent.toml` (`approval_policy`, `sandbox_mode`), under any `requirements.toml` |
| context window | `model_context_window` in the config, else what nbagent knows of the model |
| `cwd` | the workspace the session runs in |"""),
    ("code", "%agent context on\nSTATION_CITY = 'Paris'"),
    ("code", "%%agent --wait\nWhat is tomorrow's forecast for the station's city?"),
    ("code", ASSEMBLED),
    ("markdown", """### Token usage

After every model reply the session emits `token_count` (Codex's event and fields): this request's
usage, the thread's total, and the window. `%agent` prints the same as its `context:` line."""),
    ("code", TOKENS),
    ("code", "%agent"),
    ("markdown", """## 3 · The server role

Now nbagent is the server: `nbagent mcp-server` in a process of its own, driven by the MCP SDK's
`Client` in this kernel. The inner turn proposes a patch under `on-request`, so it needs approval.
There is no person at the inner session: the approval is forwarded to the caller as an
elicitation carrying the diff, and the turn's events reach it as progress notifications."""),
    ("code", CLIENT),
    ("code", CLIENT_AFTER),
    ("markdown", CODEX),
    ("markdown", NBAGENT),
    ("markdown", """## Exercise

A front end that shows servers keeps, per server, the state it is in and how often it came back,
folded from the `mcp_startup_update` events. Write that fold. The check runs it on this notebook's
updates and on sequences you have not seen."""),
    ("code", EXERCISE),
    ("code", CHECK),
]

WALKTHROUGH = Walkthrough(
    name="13-lifecycle-and-state",
    title="Connection lifecycle, state assembly, and the server role",
    cells=CELLS,
    answer=(
        "answer = lambda ups: {s: ([u['status'] for u in ups if u['server'] == s][-1], "
        "max(0, sum(u['status'] == 'starting' for u in ups if u['server'] == s) - 1)) "
        "for s in dict.fromkeys(u['server'] for u in ups)}"
    ),
    wrong_answer=(
        "answer = lambda ups: {u['server']: (u['status'], sum(v['status'] == 'starting' for v in ups "
        "if v['server'] == u['server'])) for u in ups}"
    ),
    timeout=60,
    files=("13-lifecycle-and-state.json", "13-lifecycle-inner.json"),
)
