"""00-the-loop-by-hand: the lesson's four functions (state, a prompt built from state, one tool
call, the result backfilled) written out in a few lines against a scripted model and a real MCP
server, then the same turn through nbagent, read back with ``%agent inspect``."""

from __future__ import annotations

from nbagent.examples.cells import CellKind
from nbagent.examples.walkthroughs import Walkthrough

SETUP = r'''import json, os, sys
from pathlib import Path
from nbagent.examples.walkthroughs.kit import workspace, autopilot, check, claim
from nbagent.examples.openai_compatible_server import ScriptedChatServer

# A SCRIPTED model over real HTTP (Chat Completions, as Ollama or vLLM speak it): each request
# gets the next reply below. Replies 1-2 answer the loop we write by hand, 3-4 nbagent's turn.
GOAL = "What does my note `todo` say?"
REPLIES = [
    {"text": "", "tool_calls": [{"name": "read_note", "arguments": {"name": "todo"}}]},
    {"text": "Your note says: fix the failing test in calc/core.py."},
    {"text": "", "tool_calls": [{"name": "mcp__demo__read_note", "arguments": {"name": "todo"}}]},
    {"text": "Your note says: fix the failing test in calc/core.py."},
]
local = ScriptedChatServer(REPLIES).start()      # 127.0.0.1, a fresh bearer token
os.environ["LOCAL_MODEL_KEY"] = local.token

CONFIG = f"""
model = "scripted-local-model"
model_provider = "local"
approval_policy = "on-request"

[model_providers.local]
base_url = "{local.base_url}"
wire_api = "chat"
env_key = "LOCAL_MODEL_KEY"

[mcp_servers.demo]
command = $python
args = ["-m", "nbagent.examples.demo_server", "--dir", "notes", "--record", "calls.jsonl"]
trusted = true
"""
work = workspace("00-the-loop-by-hand", CONFIG)
(work / "notes").mkdir(exist_ok=True)
(work / "notes" / "todo.md").write_text("fix the failing test in calc/core.py")
(work / "calls.jsonl").unlink(missing_ok=True)   # the server's own record of what it ran'''

SERVER = r'''from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

DEMO = StdioServerParameters(command=sys.executable, env={"PATH": os.environ.get("PATH", "")},
    args=["-m", "nbagent.examples.demo_server", "--dir", "notes", "--record", "calls.jsonl"])
LOG = open("demo-server.log", "w")              # the server's stderr (the kernel's own is no file)

async with Client(stdio_client(DEMO, errlog=LOG)) as mcp:   # starts the server; MCP over its stdin/stdout
    listed = await mcp.list_tools()
for tool in listed.tools:
    print(f"{tool.name:15} {tool.description!r:60} arguments: {sorted(tool.input_schema['properties'])}")'''

STATE = r'''state = {                                   # 1. the runtime's state: history and tools
    "history": [{"type": "message", "role": "user", "content": GOAL}],
    "tools": [t for t in listed.tools if t.name == "read_note"],
}

def build_prompt(state):                    # 2. the model's view, projected from the state
    messages = []
    for item in state["history"]:
        if item["type"] == "message":
            messages.append({"role": item["role"], "content": item["content"]})
        elif item["type"] == "function_call":
            messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": item["call_id"],
                "type": "function", "function": {"name": item["name"], "arguments": item["arguments"]}}]})
        elif item["type"] == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": item["output"]})
    tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                               "parameters": t.input_schema}} for t in state["tools"]]
    return {"model": "scripted-local-model", "messages": messages, "tools": tools}

body = build_prompt(state)
print(json.dumps(body, indent=1))'''

MODEL = r'''from openai import AsyncOpenAI

llm = AsyncOpenAI(base_url=local.base_url, api_key=local.token)   # the real openai client

async def ask_model(body):
    """Send one request; record what the model said (text, calls) in the history; return it."""
    async with llm.chat.completions.stream(**body) as stream:
        message = (await stream.get_final_completion()).choices[0].message
    if message.content:
        state["history"].append({"type": "message", "role": "assistant", "content": message.content})
    for call in message.tool_calls or []:
        state["history"].append({"type": "function_call", "call_id": call.id,
                                 "name": call.function.name, "arguments": call.function.arguments})
    return message

message = await ask_model(body)
print(json.dumps(message.model_dump(exclude_none=True), indent=1))'''

CALL = r'''async def call_tool(name, arguments):        # 3. one tool call, on the real server
    async with Client(stdio_client(DEMO, errlog=LOG)) as mcp:
        return await mcp.call_tool(name, arguments)

call = state["history"][-1]
result = await call_tool(call["name"], json.loads(call["arguments"]))
print(json.dumps(result.model_dump(exclude_none=True), indent=1))'''

BACKFILL = r'''def backfill(state, call, result):           # 4. the result, as an item the model reads next
    text = "\n".join(block.text for block in result.content if block.type == "text")
    state["history"].append({"type": "function_call_output", "call_id": call["call_id"], "output": text})

backfill(state, call, result)
body = build_prompt(state)
print(json.dumps(body["messages"], indent=1))
answer_message = await ask_model(body)
print("\nthe model answers:", answer_message.content)'''

LOOP_CHECK = r'''executed = [json.loads(line) for line in (work / "calls.jsonl").read_text().splitlines()]
claim(executed == [{**executed[0], "tool": "read_note", "arguments": {"name": "todo"}}]
      and answer_message.tool_calls is None and [i["type"] for i in state["history"]]
      == ["message", "function_call", "function_call_output", "message"],
      "the server ran read_note once, and the second request, carrying its output, got the final answer",
      otherwise=f"the server recorded {executed} and the history holds {[i['type'] for i in state['history']]}")'''

READY = r'''import nbagent.notebook as nb
from nbagent.protocol import ApprovalDecision

session = await nb.ready()
print("autopilot:", autopilot(session, lambda msg: ApprovalDecision(call_id=msg.call_id, decision="approve")
      if msg.type == "approval_requested" else None, on=AUTOPILOT))   # read_note asks nothing here'''

SAME = r'''# What nbagent sent the scripted server, beside what our loop sent.
ours, theirs = body["messages"], local.requests[3]["messages"]   # each loop's second request
print("our second request:      ", [m["role"] for m in ours])
print("nbagent's second request:", [m["role"] for m in theirs])
print("nbagent's tools:         ", [t["function"]["name"] for t in local.requests[2]["tools"]])
backfilled = lambda messages: [m["content"] for m in messages if m["role"] == "tool"]
claim(backfilled(theirs) == backfilled(ours) and len(local.requests) == 4,
      "nbagent sent the model the very tool output our backfill did, in its second request of the turn",
      otherwise=f"nbagent's tool messages were {backfilled(theirs)}, ours {backfilled(ours)}")'''

EXERCISE = '''# Codex and nbagent speak OpenAI's Responses API, whose function tool is flat: {"type": "function",
# "name": ..., "description": ..., "parameters": ...}, no "function" wrapper (`%agent inspect
# request --json` shows them so). Write the function that turns one MCP tool (as `listed.tools`
# holds them) into that dict, keeping the server's own name and its schema as it is.
answer = ...'''

CHECK = '''from mcp_types import Tool

CASES = [   # tools this notebook has not shown you
    Tool(name="run_tests", title="Run the tests", description="Run pytest.",
         input_schema={"type": "object", "properties": {"path": {"type": "string"}, "k": {"type": "string"}}}),
    Tool(name="get_weather", description="Weather of a city.", input_schema={"type": "object",
         "properties": {"city": {"type": "string"}, "units": {"enum": ["C", "F"]}}, "required": ["city"]}),
]

def flat_tools(to_function_tool):
    if not callable(to_function_tool):
        raise AssertionError("Not yet: the answer is the function itself, e.g. `answer = to_function_tool` "
                             "after a `def to_function_tool(tool): ...` in that cell")
    for tool in CASES:
        try:
            made = to_function_tool(tool)
        except Exception as exc:
            raise AssertionError(f"Not yet: on the tool {tool.name!r} it raised {type(exc).__name__}: {exc} "
                                 "(an MCP tool's fields are attributes: tool.name, tool.input_schema)") from None
        if not isinstance(made, dict):
            raise AssertionError(f"Not yet: it returned a {type(made).__name__}; return a dict, as JSON would carry it")
        if "function" in made:
            raise AssertionError("Not yet: that is the Chat Completions shape, with a \\"function\\" wrapper; "
                                 "the Responses API keeps name, description and parameters at the top")
        if made.get("type") != "function":
            raise AssertionError('Not yet: a function tool says so: "type": "function"')
        if made.get("name") != tool.name:
            raise AssertionError(f"Not yet: for {tool.name!r} the name was {made.get('name')!r}; the model calls a "
                                 "tool by the server's name for it (tool.name), not its title")
        if made.get("parameters") != tool.input_schema:
            raise AssertionError(f"Not yet: the parameters of {tool.name!r} are not its input schema as the server listed it")
        if made.get("description") != tool.description:
            raise AssertionError(f"Not yet: the description of {tool.name!r} is not the server's")
    return True

check(answer, flat_tools,
      hint="write `def to_function_tool(tool): return {...}` with the four keys, then `answer = to_function_tool`",
      why="that is the shape nbagent/models/responses.py sends; Chat Completions (the requests above) only wraps "
          "the same three fields in \\"function\\". Which name and schema go in is the runtime's choice: nbagent "
          "prefixes the name (mcp__demo__read_note) and may reshape the schema (walkthroughs 02 and 03).")'''

CELLS: list[tuple[CellKind, str]] = [
    ("markdown", """# 00 · The loop by hand: state, prompt, one tool call, backfill

The lesson sketches a runtime in four functions: `loadThreadState`, `buildPromptFromState`,
`streamModelAndRuntime`, `persistEvent`. What matters, it says, is not the names but the
boundaries: load the state, build the model's view of it, consume structured events, record the
facts. And the fourth step of every turn is **backfill**: a tool's result becomes an item in the
history, and the model decides what comes next. That loop is what makes a coding agent more than a
chatbot.

## The problem this boundary solves

A model cannot run anything. It only answers a request, and a request is a **projection of the
runtime's state**: the history so far and the tools on offer. So someone must keep that state,
build each request from it, run the call the model asks for, and put the result back where the
next request will carry it. This notebook writes those four steps by hand, in a few lines each,
against a scripted model (real HTTP, the real `openai` client) and a real MCP server (the real
`mcp` SDK client). Then it runs the same goal through nbagent and finds each step in what nbagent
did."""),
    ("code", SETUP),
    ("markdown", """## A live demonstration: the loop by hand

First the tools. The mcp SDK's client starts `nbagent/examples/demo_server.py` as a child process
and asks it `tools/list`:"""),
    ("code", SERVER),
    ("markdown", """**1 · State** is the history (items, in the Responses API's shapes Codex uses:
`message`, `function_call`, `function_call_output`) and the tools. **2 · The prompt** is built
from it: here a Chat Completions body, the format the scripted server speaks; the MCP tool becomes
a function tool."""),
    ("code", STATE),
    ("markdown", "The model is asked. Its answer is not text but a call, which goes into the history:"),
    ("code", MODEL),
    ("markdown", "**3 · One tool call**: the arguments the model wrote go to the server, which runs the tool:"),
    ("code", CALL),
    ("markdown", """**4 · Backfill**: the result becomes a `function_call_output` item tied to the call's
`call_id`, and the next request, built from the state again, carries it. Now the model answers:"""),
    ("code", BACKFILL + "\n\n" + LOOP_CHECK),
    ("markdown", """## The same turn through nbagent

The same goal, the same scripted server (now as nbagent's model provider, `wire_api = "chat"`)
and the same MCP server, configured in the `nbagent.toml` the first cell wrote."""),
    ("code", "%load_ext nbagent\n" + READY),
    ("code", "%%agent --wait\nWhat does my note `todo` say?"),
    ("markdown", """Three views of that turn, read back from the live session:

* `%agent inspect request`: the last request nbagent built (step 2). Its instructions, its tools
  (nbagent's own, then the demo server's under model-visible names such as
  `mcp__demo__read_note`) and its items: the history, the backfilled output last (step 4).
* `%agent inspect turn`: the turn's events in order. The first reply (its `token_count`), the
  tool call (step 3, `tool_call_begin` and `tool_call_end`), then the second reply, streamed word
  by word, and the turn's end.
* `%agent inspect wire demo`: the JSON-RPC nbagent exchanged with the server, the `tools/call`
  and its result."""),
    ("code", "%agent inspect request\n%agent inspect turn\n%agent inspect wire demo -n 2"),
    ("code", SAME),
    ("markdown", """## Where this lives in nbagent

| step | by hand above | nbagent |
|---|---|---|
| 1 · state | `state = {"history", "tools"}` | `nbagent/core/thread.py` (`ThreadState`) holds the thread's items, each written to the rollout (`nbagent/store/rollout.py`) before memory; `nbagent/mcp/manager.py` keeps one connection per server and its tools, named by `nbagent/mcp/identity.py` |
| 2 · prompt from state | `build_prompt(state)` | `nbagent/core/turn.py` (`_sample`) takes the items the window holds from `nbagent/core/context.py` (`ContextView`), the instructions from `nbagent/core/instructions.py`; `nbagent/models/chat.py` (`to_messages`, `to_tools`) or `nbagent/models/responses.py` writes the wire body |
| 3 · one tool call | `call_tool(name, arguments)` | `nbagent/core/tool_call.py` (`execute_call`): resolve the name, approve (`nbagent/core/approval.py`), run on the server, emit `tool_call_begin`/`tool_call_end` |
| 4 · backfill | `backfill(state, call, result)` | `nbagent/core/tool_output.py` (`to_model_output`) makes the text; `tool_call.py` records the `function_call_output` item; `turn.py` loops to the next request |

The lesson's way of reading such code sorts the files into three kinds, and this turn touched
all three: **protocol and data structures** (the items of `nbagent/protocol/items.py`,
`FunctionCall` and `FunctionCallOutput`, and the wire shapes of `nbagent/models/chat.py`), **runtime
state moved forward** (`turn.py`, `tool_call.py`, `thread.py` above) and **surfaces** that show it
to a person or a program (`nbagent/notebook/magics.py` for `%%agent`, `nbagent/notebook/inspect_view.py`
for the three views above).

What nbagent adds around the same four steps is the rest of the lesson: every item is written to
the rollout as it happens, every step is an event a widget or a client can follow, the call may
need an approval, and the server runs in a sandbox."""),
    ("markdown", """## Where this lives in Codex

In openai/codex at commit `608b8b1cc6ce` (each link names the commit and the lines):

* [`codex-rs/core/src/tools/handlers/mcp.rs` L226-L250](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/tools/handlers/mcp.rs#L226-L250) (`create_tool_spec`): the MCP tool as the model sees it; [L116-L156](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/tools/handlers/mcp.rs#L116-L156)
  (`handle`): the handler that takes the model's call back to the raw server and tool.
* [`codex-rs/core/src/mcp_tool_call.rs` L106-L292](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/mcp_tool_call.rs#L106-L292) (`handle_mcp_tool_call`): step 3 and 4 for an MCP tool: begin event,
  approval, the call, the result made fit for the model, end event.
* [`codex-rs/codex-mcp/src/connection_manager.rs` L402-L441](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/connection_manager.rs#L402-L441) (`list_all_tools`): the connections' tools, the state step 1 reads."""),
    ("markdown", """## Exercise

Step 2 turned an MCP tool into a Chat Completions function tool. Write it for the Responses API,
which Codex and nbagent use (the cell says the shape). The check runs your function on tools you
have not seen."""),
    ("code", EXERCISE),
    ("code", CHECK),
]

WALKTHROUGH = Walkthrough(
    name="00-the-loop-by-hand",
    title="The loop by hand: state, prompt, one tool call, backfill",
    cells=CELLS,
    answer=(
        'answer = lambda tool: {"type": "function", "name": tool.name, "description": tool.description, '
        '"parameters": tool.input_schema}'
    ),
    wrong_answer=(
        'answer = lambda tool: {"type": "function", "function": {"name": tool.name, '
        '"description": tool.description, "parameters": tool.input_schema}}'
    ),
    timeout=120,
)
