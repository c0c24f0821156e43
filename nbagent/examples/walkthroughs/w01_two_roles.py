"""01-two-roles: nbagent as an MCP client (it consumes a server's tools) and as an MCP server
(another program's MCP client drives nbagent over stdio)."""

from __future__ import annotations

from nbagent.examples.cells import CellKind
from nbagent.examples.walkthroughs import Walkthrough

SETUP = '''from nbagent.examples.walkthroughs.kit import workspace, autopilot, check, data

CONFIG = f"""
model = "replay:{data('01-two-roles.json')}"   # the scripted model's answers (offline)
approval_policy = "on-request"

[mcp_servers.demo]                # role 1: nbagent is this server's MCP client
command = $python
args = ["-m", "nbagent.examples.demo_server", "--dir", "notes", "--record", "calls.jsonl"]
trusted = true
"""
work = workspace("01-two-roles", CONFIG)
(work / "calls.jsonl").unlink(missing_ok=True)   # the servers' record starts empty on every run'''

READY = '''import nbagent.notebook as nb
from nbagent.protocol import ApprovalDecision, ListMcpTools

session = await nb.ready()
await session.perform(ListMcpTools())          # the demo server is started in the background

def approve(msg):                      # what the Approve button sends, when the autopilot is on
    if msg.type == "approval_requested":
        return ApprovalDecision(call_id=msg.call_id, decision="approve")
autopilot(session, approve, on=AUTOPILOT)

begins = []                          # every routed call
session.subscribe(lambda event: event.msg.type == "tool_call_begin" and begins.append(event.msg))
print("servers:", {name: status.state for name, status in session.snapshot().servers.items()})'''

MODEL_SAW = '''import json
from IPython.utils.capture import capture_output

with capture_output() as shown:          # the last model request, as nbagent sent it
    %agent inspect request --json
sent = json.loads(shown.stdout)["tools"]
print("the model was offered:", [tool["name"] for tool in sent])
print(json.dumps(next(t for t in sent if t["name"] == "mcp__demo__write_note"), indent=1))

call = next(item for item in session.snapshot().items if item.type == "function_call")
print("\\nthe model called:   ", call.name, call.arguments)
begin = begins[0]
print("the runtime routed: ", (begin.server, begin.raw_tool), "policy", session.snapshot().policy)'''

SERVER_GOT = '''from pathlib import Path

spec = next(s for s in session.snapshot().tools if s.raw_name == "write_note")
print("the server listed:  ", spec.raw_name, json.dumps(spec.input_schema))
received = [json.loads(line) for line in Path("calls.jsonl").read_text().splitlines()]
print("the server executed:", received[0]["tool"], received[0]["arguments"])
output = next(item for item in session.snapshot().items if item.type == "function_call_output")
print("the model read back:", output.output)
print("the thread recorded:", [item.type for item in session.snapshot().items])'''

CLIENT = '''import os, sys
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

# `python -m nbagent.server` is `nbagent mcp-server`: nbagent itself, served over stdio.
nbagent_server = StdioServerParameters(
    command=sys.executable,
    args=["-m", "nbagent.server", "--model", f"replay:{data('01-two-roles-inner.json')}", "--cwd", str(work)],
    env={"NBAGENT_HOME": os.environ["NBAGENT_HOME"], "PATH": os.environ.get("PATH", "")},
)
with open("nbagent-server.log", "w") as stderr:  # where the server process writes its stderr
    async with Client(stdio_client(nbagent_server, errlog=stderr)) as client:  # the mcp SDK's client, in this kernel
        listed = await client.list_tools()
        result = await client.call_tool("agent", {"prompt": "Which notes are there?"})

for tool in listed.tools:
    print(f"{tool.name:12} {tool.title!r:34} arguments: {sorted(tool.input_schema['properties'])}")'''

CLIENT_RESULT = '''print("is_error:", result.is_error)
print("structured:", result.structured_content)
for line in Path("calls.jsonl").read_text().splitlines():
    print("demo server executed:", line)'''

EXERCISE = """# The outside client wants the agent to go on with the thread it started: "Now read the note back."
# Write the arguments of that call, `await client.call_tool("agent-reply", arguments)`, as a dict.
answer = ..."""

CHECK = r"""from nbagent.mcp.validation import compiled

def refuse(why):
    raise AssertionError(f"Not yet: {why}")

def continues_the_thread(arguments):
    if not isinstance(arguments, dict):
        refuse(f"`answer` is a {type(arguments).__name__}; call_tool takes the arguments as a dict")
    reply = next(tool for tool in listed.tools if tool.name == "agent-reply")
    wrong = sorted(e.message for e in compiled(reply.input_schema).iter_errors(arguments))
    if wrong:
        refuse(f"agent-reply's inputSchema (listed above) refuses it: {'; '.join(wrong)}")
    if arguments["thread_id"] != result.structured_content["thread_id"]:
        refuse("that is not the thread the `agent` call started; what did that call give back to its caller?")
    if not arguments["prompt"].strip():
        refuse("the prompt is empty; say what the agent should do next")
    return True

check(answer, continues_the_thread,
      hint="see the message above",
      why="the outside client holds only a thread id: the session, its history and its MCP servers stay inside "
          "nbagent, and the caller reaches them only through agent and agent-reply.")"""

CELLS: list[tuple[CellKind, str]] = [
    ("markdown", """# 01 · Two roles: nbagent as MCP client and as MCP server

nbagent sits on both sides of MCP. As a **client** it starts other programs' MCP servers and
brings their tools into its own runtime: its names, its approvals, its thread history, its events.
As a **server** (`nbagent mcp-server`) it offers that whole runtime to another program — an IDE,
another agent — as two tools.

## The problem the boundary solves

An MCP server is somebody else's code with somebody else's names and schemas; a caller of nbagent
is somebody else's program. Neither may reach into the runtime's state. So the client role has one
job: turn "call tool X on server S" into a call that goes through the session (routing,
approval, recording, result wrapping). The server role has the mirror job: turn "call `agent`"
into a turn of a real session, and give back only its result — never a handle on its tools.

We run both, in the running example *fix a failing test*: the test needs a fixture note."""),
    ("markdown", "## A live demonstration\n\nA scratch folder, a scripted model (offline) and one real MCP server: `nbagent/examples/demo_server.py`, which records every call it executes in `calls.jsonl`."),
    ("code", SETUP),
    ("code", "%load_ext nbagent"),
    ("code", READY),
    ("markdown", """### Role 1: a server nbagent consumes

The model asks for `mcp__demo__write_note`. The session routes it to the demo server, asks for
approval (the tool is marked destructive; the autopilot approves unless `AUTOPILOT = False`), runs it,
records it and hands the result back to the model."""),
    ("code", "%%agent --wait\nThe test fails: its fixture note is missing. Fix it."),
    ("markdown", """## "What the model saw" vs what the server sent

The model never sees the server. It sees one entry of the `tools` list in its request, under a
name the runtime made (`mcp__demo__write_note`; `%agent inspect request` shows the last request
nbagent sent, `--json` hands it to code); it answers with that name. The runtime turns it
back into `(server, raw tool)` before anything is sent."""),
    ("code", MODEL_SAW),
    ("code", SERVER_GOT),
    ("markdown", """### Role 2: nbagent as a server, driven by an MCP client

Now the other side. The cell below is an outside program: the `mcp` SDK's `Client`, started in this
kernel, launches `nbagent mcp-server` over stdio, lists its tools and calls `agent`. Inside that
server process a fresh session runs a turn with its own scripted model; that session is itself a
client of the demo server (it reads this folder's `nbagent.toml`), so both roles run at once."""),
    ("code", CLIENT),
    ("markdown", "The client got a `CallToolResult`: the turn's final text and the `thread_id` to continue with `agent-reply`. The demo server's record shows the inner session's call after ours — the outside client never named it."),
    ("code", CLIENT_RESULT),
    ("markdown", """## Where this lives in Codex

In openai/codex at commit `608b8b1cc6ce` (each link names the commit and the lines):

- [`codex-rs/codex-mcp/src/connection_manager.rs` L104-L269](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/connection_manager.rs#L104-L269) — the client role: one manager owns the connections to every
  configured server; [L632-L668](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/connection_manager.rs#L632-L668) (`call_tool`): calls go through it.
- [`codex-rs/core/src/mcp_tool_call.rs` L849-L914](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/mcp_tool_call.rs#L849-L914) — one MCP call inside a turn: begin/end events around it; [L106-L292](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/mcp_tool_call.rs#L106-L292)
  (`handle_mcp_tool_call`) wraps the result as a model-readable item.
- [`codex-rs/mcp-server/src/message_processor.rs` L325-L344](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/mcp-server/src/message_processor.rs#L325-L344) — the server role: a caller's `tools/call` is dispatched to its handler.
- [`codex-rs/mcp-server/src/codex_tool_runner.rs` L194-L411](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/mcp-server/src/codex_tool_runner.rs#L194-L411) — a tool call of the caller runs a session turn and its events become the
  answer."""),
    ("markdown", """## Where this lives in nbagent

- `nbagent/mcp/manager.py` — `McpConnectionManager`: every configured server behind one tool
  provider; `nbagent/mcp/connection.py` is one server's connection.
- `nbagent/core/tool_call.py` — one call: parse, approve, run, wrap (the `tool_call_begin` event
  above, with `server` and `raw_tool`).
- `nbagent/server/app.py` — the MCP server's handlers (`agent`, `agent-reply`);
  `nbagent/server/tools.py` declares their schemas; `nbagent/server/threads.py` keeps one session
  per thread alive between calls."""),
    ("markdown", """## Exercise

An MCP client of nbagent continues a thread by calling it again. Write the arguments of that
call; the check holds them to the schema the server listed and to the thread this run started."""),
    ("code", EXERCISE),
    ("code", CHECK),
]

WALKTHROUGH = Walkthrough(
    name="01-two-roles",
    title="Two roles: nbagent as MCP client and as MCP server",
    cells=CELLS,
    answer='answer = {"thread_id": result.structured_content["thread_id"], "prompt": "Now read the note back."}',
    wrong_answer='answer = {"thread_id": session.snapshot().thread_id, "prompt": "Now read the note back."}',
    timeout=120,
    files=("01-two-roles.json", "01-two-roles-inner.json"),
)
