"""10-many-tools: a catalogue bigger than one model request may carry — which tools a request
carries, ``search_tools``, which finds the rest, and schemas made only when a tool goes into a
request."""

from __future__ import annotations

from nbagent.examples.cells import CellKind
from nbagent.examples.walkthroughs import Walkthrough

SETUP = '''from nbagent.examples.walkthroughs.kit import workspace, check, data

CONFIG = f"""
model = "replay:{data('10-many-tools.json')}"
approval_policy = "full-auto"     # approvals are another walkthrough's subject
max_model_tools = 128             # the default, and what OpenAI's APIs accept at most

[mcp_servers.platform]            # a code-hosting platform's API: 240 tools
command = $python
args = ["-m", "nbagent.examples.platform_server", "--record", "calls.jsonl"]
"""
work = workspace("10-many-tools", CONFIG)
(work / "calls.jsonl").unlink(missing_ok=True)   # the server's record starts empty on every run'''

READY = '''import nbagent.notebook as nb

from nbagent.protocol import ListMcpTools
session = await nb.ready()
await session.perform(ListMcpTools())                  # full-auto: no approval is asked, nobody need click

catalogue = session.snapshot().tools
platform = [spec for spec in catalogue if spec.server == "platform"]
others = [spec.name for spec in catalogue if spec.server is None]
print(f"{len(catalogue)} tools in the catalogue: {len(platform)} from the platform server, "
      f"{len(others)} of nbagent's own and the notebook's: {others}")
print("at most", session.snapshot().max_model_tools, "go into one request")'''

DEFERRED = '''import json

pr = next(spec for spec in platform if spec.raw_name == "create_pull_request")
print(f"schemas not made yet: {sum(spec.deferred for spec in platform)} of {len(platform)}")
print("\\nwhat is whole already, without a schema:")
print("  model-visible name:", pr.name, "| raw:", (pr.server, pr.raw_name))
print("  definition hash (approvals are bound to it):", pr.definition_hash[:16], "...")
print("  annotations:", pr.annotations.model_dump(exclude_none=True))
print("\\nthe server's inputSchema, kept as sent:", json.dumps(pr.input_schema)[:120], "...")
print("the parameters for the model, for now a placeholder:", pr.parameters)'''

REQUESTS = '''from IPython.utils.capture import capture_output
from nbagent.core.request_tools import SEARCH_HINT

with capture_output() as shown:
    %agent inspect request --all --json
turn = json.loads(shown.stdout)
for n, request in enumerate(turn["requests"], turn["dropped"] + 1):
    names = [tool["name"] for tool in request["tools"]]
    mcp = [name for name in names if name.startswith("mcp__")]
    print(f"request {n}: {len(names):3} tools, {len(mcp):3} of them MCP tools | "
          f"search_tools: {'search_tools' in names} | create_pull_request: {pr.name in names}")
print("\\nthe instructions tell the model to search:", all(SEARCH_HINT in (r["instructions"] or "") for r in turn["requests"]))'''

SEARCH = '''search = next(item for item in session.snapshot().items
              if item.type == "function_call" and item.name == "search_tools")
found = next(item for item in session.snapshot().items
             if item.type == "function_call_output" and item.call_id == search.call_id)
print("the model asked:", search.arguments)
print("\\nand read:\\n" + found.output)
print("\\nkept beside it for the next requests (its structured part):", found.structured)'''

SCHEMA_MADE = '''sent = {tool["name"]: tool for tool in turn["requests"][-1]["tools"]}
made = sent[pr.name]["parameters"]
print("in the request, create_pull_request's parameters are made:", made != pr.parameters)
print(json.dumps(made)[:300], "...")
print("\\nthe catalogue's spec is still the placeholder:", pr.deferred, pr.parameters)
platform_names = {spec.name for spec in platform}
print("schemas made for the model so far:",
      len({tool["name"] for request in turn["requests"] for tool in request["tools"]} & platform_names),
      "of", len(platform))'''

SERVER_GOT = '''from pathlib import Path

ran = [json.loads(line) for line in Path("calls.jsonl").read_text().splitlines()]
for line in ran:
    print(line["tool"], json.dumps(line["arguments"]))
print("\\ncalls the platform server received:", len(ran), "(the search is nbagent's own, no server hears it)")'''

EXERCISE = '''# The catalogue holds more than `cap` tools. `own`: the names of the tools that are not MCP tools,
# in catalogue order; `in_view`: the MCP tools in view, oldest first. Return the names one request
# carries, in order: the tools of `own` it always carries, then "search_tools", then tools in view,
# newest first, until the request holds `cap` tools.
def carried(cap, own, in_view):
    ...

answer = ...'''

CHECK = r'''from nbagent.core.request_tools import RecentTools, RequestTools
from nbagent.protocol import FunctionCall, ToolSpec

def refuse(why):
    raise AssertionError(f"Not yet: {why}")

def nbagent_carries(cap, own, in_view):
    # What RequestTools.select puts in a request, on a catalogue made of these names (plus enough
    # MCP tools nobody looked at to pass the cap) and a thread whose calls put `in_view` in view.
    mcp = [*in_view, *(f"mcp__platform__unseen_{n}" for n in range(cap + 1))]
    catalogue = {name: (ToolSpec(name=name), None) for name in own}
    catalogue |= {name: (ToolSpec(name=name, server="platform", raw_name=name), None) for name in mcp}
    calls = [FunctionCall(call_id=f"call_{n}", name=name, arguments="{}") for n, name in enumerate(in_view)]
    return [spec.name for spec, _ in RequestTools(cap).select(catalogue, calls)[1]]

mcp_names = {spec.name for spec in platform}
ours = (4, [spec.name for spec in catalogue if spec.server is None],
        [name for name in RecentTools(16).sync(session.snapshot().items) if name in mcp_names])
cases = [
    ("this thread with max_model_tools = 4", *ours),
    ("room to spare", 10, ["shell", "apply_patch", "run_python"],
     ["mcp__crm__find_contact", "mcp__crm__add_note", "mcp__mail__send", "mcp__mail__draft", "mcp__crm__merge"]),
    ("more of its own tools than fit", 8, ["shell", "apply_patch", "read_notebook", "insert_cell", "replace_cell",
                                           "delete_cell", "run_cell", "run_python"],
     ["mcp__docs__search", "mcp__docs__open", "mcp__docs__cite"]),
    ("no tools of its own", 5, [], ["mcp__a__one", "mcp__a__two", "mcp__a__three", "mcp__a__four", "mcp__a__five",
                                    "mcp__a__six"]),
    ("a tiny cap", 2, ["shell", "run_python"], ["mcp__kv__get"]),
]

def carries_right(fn):
    if not callable(fn):
        refuse(f"`answer` is a {type(fn).__name__}; it should be the function itself (`answer = carried`, no call)")
    for name, cap, own, in_view in cases:
        try:
            got = fn(cap, list(own), list(in_view))
        except Exception as exc:
            refuse(f"on {name} it raised {type(exc).__name__}: {exc} (cap is an int, own and in_view lists of names)")
        if not isinstance(got, list) or not all(isinstance(n, str) for n in got):
            refuse(f"on {name} it returned {type(got).__name__}; return a list of tool names")
        wanted = nbagent_carries(cap, own, in_view)
        if got == wanted:
            continue
        if [n for n in got if n in own] != wanted[:wanted.index("search_tools")]:
            refuse(f"on {name} the tools of `own` it carries are off: when they alone would fill the "
                   "request, a quarter of the cap (at least one) stays for tools in view")
        if got.count("search_tools") != 1 or got.index("search_tools") != wanted.index("search_tools"):
            refuse(f"on {name} search_tools is missing or misplaced: every capped request carries it, right after them")
        if len(got) > cap:
            refuse(f"on {name} the request holds {len(got)} tools; it holds at most cap ({cap})")
        refuse(f"on {name} the tools in view are off: newest first, until the request holds cap tools")
    return True

check(answer, carries_right,
      hint="see the message above",
      why="in view is read from the thread's items (the search's structured output and the calls), "
          "newest first, so a resumed thread carries the same tools; what does not fit drops out "
          "of the request, not out of the catalogue: a call to it still resolves and is approved as usual.")'''

ANSWER = '''def carried(cap, own, in_view):
    room = cap - 1
    if len(own) > room:
        room -= max(1, cap // 4)
    picked = [*own[:room], "search_tools"]
    return picked + list(reversed(in_view))[:cap - len(picked)]
answer = carried'''
WRONG_ANSWER = "answer = lambda cap, own, in_view: [*own, 'search_tools', *reversed(in_view)][:cap]"

CELLS: list[tuple[CellKind, str]] = [
    ("markdown", """# 10 · Many tools: a catalogue bigger than one request

## The problem the boundary solves

A model request is a projection of the runtime's state: the history, the instructions, and the
tools the model may call. With a few big MCP servers the tools alone break it. OpenAI's APIs
refuse a request with more than 128 tools (HTTP 400, "array too long"), and a model server
without that limit still cannot fit thousands of schemas into its context window, while every
request pays for every schema it carries. Sanitising every schema of a 50,000-tool catalogue
up front would also keep the session waiting for seconds.

So past `max_model_tools` nbagent chooses. The catalogue keeps every tool, and calls resolve
against all of it, through the same approvals. Each request carries the tools that are not MCP
tools, nbagent's own read-only `search_tools`, and the MCP tools **in view**: those the thread's
searches returned and those the model called, newest first. And a tool's schema for the model
is made when it first goes into a request."""),
    ("markdown", "## A live demonstration\n\nOne real MCP server, `nbagent/examples/platform_server.py`: a code-hosting platform's API, eight actions on each of thirty resources, each schema with a `$ref`, enums and nested objects. It records every call in `calls.jsonl`."),
    ("code", SETUP),
    ("code", "%load_ext nbagent"),
    ("code", READY),
    ("markdown", """### A catalogue built deferred

With more MCP tools than one request may carry, the connection manager builds the catalogue
*deferred*. Everything a call and its approval need is made at once: the model-visible name,
the raw identity, the annotations and the definition hash over the raw definition. Only the
sanitised schema waits, and the spec says so (`deferred`)."""),
    ("code", DEFERRED),
    ("markdown", "### A turn that needs a tool it was not shown\n\nThe scripted model searches for a tool that opens a pull request, calls what it found, and answers."),
    ("code", "%%agent --wait\nThe login fix is on branch fix-login of acme/web: open a pull request into main."),
    ("markdown", """## What each request carried

`%agent inspect request --all` shows every request of the last turn as sent (here read as
`--json`): the turn made three. The first carries no MCP tool at all: none
is in view yet, so the model gets `search_tools` and two sentences in the instructions saying
more tools exist. After the search, its results are in view, and the second request carries
them; the third keeps them."""),
    ("code", REQUESTS),
    ("markdown", """### What the search returned

BM25 over each tool's name, title, server and description (a name counts three times a
description, and a word counts once per field, so a server cannot rank its tool up by repeating
words). The descriptions are the servers' text: the model reads them one line each, cut to 300
characters, quoted, under a line saying they are not instructions."""),
    ("code", SEARCH),
    ("markdown", """### The schema, made when the tool went into a request

`ToolRouter.for_model` completes the specs a request carries through their server's provider,
which sanitises each distinct schema once and keeps the result while the tool is listed. The
model sees the same schema an eager build would have made (the golden test holds both builds
to the same digests); the catalogue's own spec stays light."""),
    ("code", SCHEMA_MADE),
    ("markdown", """## "What the model saw" vs what the server sent

The model saw 240 tools only through the search; the server sent all 240 in `tools/list` and
received exactly one call."""),
    ("code", SERVER_GOT),
    ("markdown", """## Where this lives in Codex

In openai/codex at commit `608b8b1cc6ce` (each link names the commit and the lines):

- [`codex-rs/codex-mcp/src/connection_manager.rs` L402-L441](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/connection_manager.rs#L402-L441) (`list_all_tools`) — every server's connection and the tools each lists;
  the whole set is what a call is resolved against ([L632-L668](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/connection_manager.rs#L632-L668), `call_tool`).
- [`codex-rs/codex-mcp/src/tools.rs` L141-L249](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/tools.rs#L141-L249) — the model-visible view of each tool is made apart from the raw tool
  ([L30-L56](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/tools.rs#L30-L56), `ToolInfo`), which is what lets a runtime choose which views a request carries
  without touching how a call is routed.
- [`codex-rs/core/src/tools/handlers/mcp.rs` L116-L156](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/tools/handlers/mcp.rs#L116-L156) (`handle`) — a call made by a model-visible name reaches the raw server
  and tool.

Codex does the same for its apps' MCP tools: they are hidden until the model calls
`search_tool_bm25` (BM25 over the tools' names, titles, servers and descriptions), whose matches
are added to the tools for the rest of the thread, while the core tools stay listed. nbagent
hides tools only past the cap, and keeps what is in view bounded (the newest first), so a long
thread's searches never push a request past it."""),
    ("markdown", """## Where this lives in nbagent

- `nbagent/core/request_tools.py` — `RequestTools.select`: the tools one request carries;
  `RecentTools`, what is in view, read from the thread's items; `ToolIndex` and `search_tools`.
- `nbagent/core/turn.py` — each model request asks for its tools there, and says once when the
  tools that are not MCP tools alone would fill the cap.
- `nbagent/core/router.py` — `ToolRouter.for_model`: the schemas of the carried tools, made now.
- `nbagent/mcp/catalog.py` — `CatalogBuilder.build(defer=True)` and the `Completer`, which
  sanitises each distinct schema once.
- `nbagent/mcp/manager.py` — builds the catalogue deferred once its MCP tools pass the cap."""),
    ("markdown", """## Exercise

Five tools here are not MCP tools (the notebook's own). When they alone would fill a request,
only the first of them, up to three quarters of the cap, are always carried: the last quarter
stays for tools in view, or what a search finds could never come in (and the session warns once,
naming the ones left out).

Write that selection as a function. The check holds it to `RequestTools.select`, nbagent's own, on
this thread with a cap of 4 and on catalogues this notebook never built."""),
    ("code", EXERCISE),
    ("code", CHECK),
]

WALKTHROUGH = Walkthrough(
    name="10-many-tools",
    title="Many tools: a catalogue bigger than one request",
    cells=CELLS,
    answer=ANSWER,
    wrong_answer=WRONG_ANSWER,
    timeout=120,
    files=("10-many-tools.json",),
)
