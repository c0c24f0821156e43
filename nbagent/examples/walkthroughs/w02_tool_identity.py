"""02-tool-identity: a tool's raw identity (server, tool) vs the name the model sees, and how a
model-visible name is routed back."""

from __future__ import annotations

from nbagent.examples.cells import CellKind
from nbagent.examples.walkthroughs import Walkthrough

SETUP = '''from nbagent.examples.walkthroughs.kit import workspace, autopilot, check, data

CONFIG = f"""
model = "replay:{data('02-tool-identity.json')}"
approval_policy = "full-auto"     # approvals are another walkthrough's subject

[mcp_servers.docs]                # serves `search` and the awkward names
command = $python
args = ["-m", "nbagent.examples.identity_server", "--name", "docs", "--awkward", "--record", "calls.jsonl"]

[mcp_servers.wiki]                # serves `search` too
command = $python
args = ["-m", "nbagent.examples.identity_server", "--name", "wiki", "--record", "calls.jsonl"]
"""
work = workspace("02-tool-identity", CONFIG)
(work / "calls.jsonl").unlink(missing_ok=True)   # the servers' record starts empty on every run'''

READY = '''import nbagent.notebook as nb
from nbagent.protocol import ApprovalDecision, CallTool, ListMcpTools

session = await nb.ready()
await session.perform(ListMcpTools())
autopilot(session, lambda msg: ApprovalDecision(call_id=msg.call_id, decision="approve")
          if msg.type == "approval_requested" else None, on=AUTOPILOT)

begins = []                          # every routed call
session.subscribe(lambda event: event.msg.type == "tool_call_begin" and begins.append(event.msg))
print("servers:", {name: status.state for name, status in session.snapshot().servers.items()})'''

TABLE = '''mcp = [spec for spec in session.snapshot().tools if spec.source == "mcp"]
print(f"{'server':6} {'raw tool (as sent)':32} {'model-visible name':66} length")
for spec in mcp:
    raw = spec.raw_name if len(spec.raw_name) <= 32 else spec.raw_name[:29] + "..."
    print(f"{spec.server:6} {raw:32} {spec.name:66} {len(spec.name)}")'''

HOW = '''from nbagent.examples.identity_server import LONG_NAME
from nbagent.mcp.identity import MAX_NAME_LEN, base_name, hashed_name, qualify_tools, raw_digest, sanitize_name

for raw in [("docs", "read.file"), ("docs", "查询订单"), ("docs", LONG_NAME)]:
    base = base_name(*raw)
    print(raw[1][:30], "-> base", repr(base), f"({len(base)} chars, limit {MAX_NAME_LEN})")
    print("   sha1 of the raw identity:", raw_digest(raw)[:8], "-> hashed:", hashed_name(base, raw_digest(raw)))
print("\\nsanitize_name('取消订单') =", repr(sanitize_name("取消订单")), "= sanitize_name('查询订单') =", repr(sanitize_name("查询订单")))

idents = [(spec.server, spec.raw_name) for spec in mcp]
names = qualify_tools(idents)
for warning in names.warnings:
    print("warning:", warning)
print("\\nthe same names in any listing order:", qualify_tools(reversed(idents)).by_raw == names.by_raw)
print("the live catalogue is exactly this map:", names.by_raw == {(s.server, s.raw_name): s.name for s in mcp})'''

AMBIGUOUS = '''# "__" separates server from tool, but a server may be called `a__b`: these two would both be
# mcp__a__b__c. The digest hashes the identity as a JSON list, so the two never share a hash.
print(qualify_tools([("a__b", "c"), ("a", "b__c")]).by_raw)'''

MODEL_SAW = '''import json
from IPython.utils.capture import capture_output

with capture_output() as shown:          # the last model request, as nbagent sent it
    %agent inspect request --json
print("the model was offered:", [t["name"] for t in json.loads(shown.stdout)["tools"] if t["name"].startswith("mcp__")])
calls = [item for item in session.snapshot().items if item.type == "function_call"]
outputs = {item.call_id: item for item in session.snapshot().items if item.type == "function_call_output"}
routed = {begin.call_id: (begin.server, begin.raw_tool) for begin in begins if begin.server}
print()
for call in calls:
    print(f"model called {call.name:36} -> routed to {routed.get(call.call_id, 'no server (unknown name)')}")
    print(f"{'':13}model read: {outputs[call.call_id].output[:90]!r}")'''

SERVER_GOT = '''from pathlib import Path

received = [json.loads(line) for line in Path("calls.jsonl").read_text().splitlines()]
for line in received:
    print("server", line["server"], "received tools/call name=", repr(line["tool"]), line["arguments"])'''

ROUTE = '''routes = {spec.name: (spec.server, spec.raw_name) for spec in session.snapshot().tools if spec.server}
long_name = next(name for name, raw in routes.items() if len(raw[1]) > 60)

# A caller outside the model (an agent connected through `%agent serve`) routes the same way.
output = await session.perform(CallTool(name=long_name, arguments={}))
print(long_name, "->", routes[long_name])
print("output:", output.output)
print("server received:", json.loads(Path("calls.jsonl").read_text().splitlines()[-1])["tool"])'''

EXERCISE = """# Write the rule for a tool alone on its server (no other identity clashes with it): a function
# of (server, tool) returning the name the model sees. The functions of the cell "How a name is
# made" may help; `qualify_tools` would do it for you, so leave it out.
answer = ..."""

CHECK = r"""from nbagent.mcp.identity import qualify_tools

def refuse(why):
    raise AssertionError(f"Not yet: {why}")

def names_right(fn):
    if not callable(fn):
        refuse(f"`answer` is a {type(fn).__name__}; it should be the function itself (`answer = visible`, no call)")
    if "qualify_tools" in getattr(getattr(fn, "__code__", None), "co_names", ()):
        refuse("it calls qualify_tools, which does the whole job; write the rule from its parts")
    cases = [("git", "status"), ("my.server", "read file v2"), ("db", "查询"), ("ci", "x" * 70),
             ("logs", "tail-" + "f" * 48), ("logs", "tail-" + "f" * 49), ("a.b", "c" * 80)]
    for server, tool in cases:
        wanted = qualify_tools([(server, tool)]).by_raw[(server, tool)]
        try:
            got = fn(server, tool)
        except Exception as exc:
            refuse(f"for ({server!r}, {tool[:12]!r}...) it raised {type(exc).__name__}: {exc}")
        if not isinstance(got, str):
            refuse(f"it returned a {type(got).__name__}; return the name as a str")
        if got == wanted:
            continue
        shown = f"({server!r}, {tool if len(tool) < 20 else tool[:12] + '...'!r}, {len(tool)} characters)"
        if not got.startswith("mcp__"):
            refuse(f"for {shown} the name does not start with the prefix only MCP tools carry")
        if any(not (c.isascii() and (c.isalnum() or c in "_-")) for c in got):
            refuse(f"for {shown} the name has characters the model API refuses; each becomes `_`")
        if len(got) > 64:
            refuse(f"for {shown} the name is {len(got)} characters, past the API's 64")
        if len(got) != len(wanted):
            refuse(f"for {shown} the name should be {len(wanted)} characters, not {len(got)}: a name that fits "
                   "keeps its full form, one that does not is cut just enough for `_` and 8 hex digits")
        if got[-9:-8] != "_":
            refuse(f"for {shown} the name is cut, but two long names cut alike would clash: what does it end with?")
        refuse(f"for {shown} the length is right but not the name: what exactly does the hash digest?")
    return True

check(answer, names_right,
      hint="see the message above",
      why="a name that fits is readable; one that does not keeps a cut prefix and a hash of the raw identity, "
          "so it is the same after a restart. A clash with another identity is the one case this leaves out.")"""

CELLS: list[tuple[CellKind, str]] = [
    ("markdown", """# 02 · Tool identity: raw names vs model-visible names

## The problem the boundary solves

Tool names come from servers nbagent does not control. Two servers can both call a tool `search`;
one server can send `read.file` and `read_file`, a name in Chinese, or a name longer than a model
API accepts (OpenAI function names must match `^[a-zA-Z0-9_-]{1,64}$`). Yet the model may see
each tool under exactly one valid, unique name, and every call it makes must reach exactly one
`(server, tool)` — the same one tomorrow, after a restart, whatever order the servers listed
their tools in.

So nbagent keeps two identities. The **raw identity** `(server, tool)` is what the server sent;
`tools/call`, approvals and the rollout use it. The **model-visible name** is made from it, and a
reverse map is the only way back."""),
    ("markdown", "## A live demonstration\n\nTwo instances of `nbagent/examples/identity_server.py`: `docs` with the awkward names, `wiki` with only `search`. Both append each call they receive to `calls.jsonl`."),
    ("code", SETUP),
    ("code", "%load_ext nbagent"),
    ("code", READY),
    ("markdown", """### What the servers sent, and the names the model gets

`search` stays readable on both servers: the server name is part of the visible name, so two
servers sending the same tool name get two different names. The rest needed a hash suffix."""),
    ("code", TABLE),
    ("markdown", """### How a name is made

`mcp__{server}__{tool}`, every character outside `[A-Za-z0-9_-]` replaced by `_`. If that fits
in 64 characters and nobody else has it, that is the name. Otherwise it is cut and suffixed with
8 hex digits of the SHA-1 of the raw identity. When two identities sanitise to the same text,
*both* get hashes — neither is privileged by which came first in a listing."""),
    ("code", HOW),
    ("code", AMBIGUOUS),
    ("markdown", """### A turn that uses them

Fix a failing test about cancelling orders: the scripted model searches both servers, looks up
the order with the hashed name, and also tries `mcp__docs__read_file` — the name *before*
hashing, which belongs to neither tool."""),
    ("code", "%%agent --wait\nThe order-cancelling test fails. Find out why."),
    ("markdown", """## "What the model saw" vs what the server sent

The model's request (`%agent inspect request` shows the last one) lists only visible names; each call is routed by the catalogue back to a raw
identity (the `tool_call_begin` event carries it); the server receives its own raw name. The
unknown name is not guessed at: the model reads an error and no server hears of it."""),
    ("code", MODEL_SAW),
    ("code", SERVER_GOT),
    ("markdown", "### Routing a visible name back\n\nThe session's router maps each visible name to its spec, and the spec carries the raw identity. a `CallTool` op (what `%agent serve` submits for an outside agent) takes a visible name exactly as the model does:"),
    ("code", ROUTE),
    ("markdown", """## Where this lives in Codex

In openai/codex at commit `608b8b1cc6ce` (each link names the commit and the lines):

- [`codex-rs/codex-mcp/src/tools.rs` L30-L56](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/tools.rs#L30-L56) (`ToolInfo`) — the same split: each tool keeps its raw server and tool name
  for the protocol call; [L141-L249](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/tools.rs#L141-L249) sanitises the model-visible parts and, on a clash or past
  64 characters, gives them a SHA-1 suffix of the raw identity.
- [`codex-rs/core/src/tools/handlers/mcp.rs` L32-L35](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/tools/handlers/mcp.rs#L32-L35) (`McpHandler`) — one handler per MCP tool holds that tool's raw identity;
  [L116-L156](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/tools/handlers/mcp.rs#L116-L156) (`handle`): a call made by the visible name reaches it and goes on with the raw
  server and tool.
- [`codex-rs/codex-mcp/src/connection_manager.rs` L402-L441](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/connection_manager.rs#L402-L441) (`list_all_tools`) — the tools of the connections, listed and normalised."""),
    ("markdown", """## Where this lives in nbagent

- `nbagent/mcp/identity.py` — `qualify_tools`, `base_name`, `hashed_name`, `raw_digest`: the names
  as a pure function of the *set* of raw identities.
- `nbagent/mcp/catalog.py` — builds the catalogue over every ready server at once, so collisions
  across servers resolve the same way whatever their start order.
- `nbagent/core/router.py` — `ToolRouter`: visible name -> (spec, provider) for every source.
- `nbagent/protocol/tools.py` — `ToolSpec`: `name` (visible) beside `server` and `raw_name`.
- `nbagent/core/tool_call.py` — an unknown name becomes an output the model reads."""),
    ("markdown", """## Exercise

Write the naming rule yourself, for a tool whose name clashes with no other. The check runs your
function on identities you have not seen: a dotted server, spaces, Chinese, names just under
and just over the limit."""),
    ("code", EXERCISE),
    ("code", CHECK),
]

WALKTHROUGH = Walkthrough(
    name="02-tool-identity",
    title="Tool identity: raw names vs model-visible names",
    cells=CELLS,
    answer=(
        "answer = lambda server, tool: base_name(server, tool) if len(base_name(server, tool)) <= MAX_NAME_LEN "
        "else hashed_name(base_name(server, tool), raw_digest((server, tool)))"
    ),
    wrong_answer='answer = lambda server, tool: f"mcp__{server}__{tool}"[:64]',
    timeout=120,
    files=("02-tool-identity.json",),
)
