"""10-many-tools: a catalogue bigger than one model request may carry — which tools a request
carries, ``search_tools``, which finds the rest, and schemas made only when a tool goes into a
request."""

from __future__ import annotations

from nbagent.examples.cells import CellKind
from nbagent.examples.walkthroughs import Walkthrough

SETUP = '''from nbagent.examples.walkthroughs.kit import workspace, model_requests, check, data

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
requests = model_requests(session)             # a tap: every request the runtime builds for the model

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

REQUESTS = '''from nbagent.core.request_tools import SEARCH_HINT

for n, request in enumerate(requests, 1):
    names = [spec.name for spec in request.tools]
    mcp = [name for name in names if name.startswith("mcp__")]
    print(f"request {n}: {len(names):3} tools, {len(mcp):3} of them MCP tools | "
          f"search_tools: {'search_tools' in names} | create_pull_request: {pr.name in names}")
print("\\nthe instructions tell the model to search:", all(SEARCH_HINT in (r.instructions or "") for r in requests))'''

SEARCH = '''search = next(item for item in session.snapshot().items
              if item.type == "function_call" and item.name == "search_tools")
found = next(item for item in session.snapshot().items
             if item.type == "function_call_output" and item.call_id == search.call_id)
print("the model asked:", search.arguments)
print("\\nand read:\\n" + found.output)
print("\\nkept beside it for the next requests (its structured part):", found.structured)'''

SCHEMA_MADE = '''sent = {spec.name: spec for spec in requests[-1].tools}
made = sent[pr.name]
print("in the request, create_pull_request's parameters are made:", made.deferred is False)
print(json.dumps(made.parameters)[:300], "...")
print("\\nthe catalogue's spec is still the placeholder:", pr.deferred, pr.parameters)
print("schemas made for the model so far:",
      len({spec.name for request in requests for spec in request.tools if spec.server == "platform"}),
      "of", len(platform))'''

SERVER_GOT = '''from pathlib import Path

ran = [json.loads(line) for line in Path("calls.jsonl").read_text().splitlines()]
for line in ran:
    print(line["tool"], json.dumps(line["arguments"]))
print("\\ncalls the platform server received:", len(ran), "(the search is nbagent's own, no server hears it)")'''

EXERCISE = '''# Say the same thread went on with `max_model_tools = 4`. Which MCP tools would its next
# request carry? Give their raw names as a list, newest in view first.
answer = ...'''

CHECK = '''from nbagent.core.request_tools import RequestTools

def next_request(cap):
    """The very selection a turn makes, on this session's catalogue and thread."""
    entries = {spec.name: (spec, None) for spec in session.snapshot().tools}
    _, picked = RequestTools(cap).select(entries, session.snapshot().items)
    return [spec.raw_name for spec, _ in picked if spec.server is not None]

def carried(names):
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise AssertionError(f"Not yet: `answer` is a {type(names).__name__}; give a list of raw tool names "
                             "(strings, as the server names them), newest in view first")
    return names == next_request(4)

check(answer, carried,
      hint="a request of 4 holds search_tools and the tools that are not MCP tools first; the room "
           "left goes to the tools in view, newest first: the called tool, then the search's results",
      why="in view is read from the thread's items (the search's structured output and the calls), "
          "newest first, so a resumed thread carries the same tools; what does not fit drops out "
          "of the request, not out of the catalogue: a call to it still resolves and is approved as usual.")'''

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

The tap recorded the three requests the turn made. The first carries no MCP tool at all: none
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

- `codex-rs/codex-mcp/src/connection_manager.rs` — owns every server's connection and the tools
  each lists; the whole set is what a call is resolved against.
- `codex-rs/codex-mcp/src/tools.rs` — the model-visible view of each tool (its name and schema)
  is made apart from the raw tool, which is what lets a runtime choose which views a request
  carries without touching how a call is routed.
- `codex-rs/core/src/tools/handlers/mcp.rs` — a call made by a model-visible name reaches the raw
  server and tool.

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
naming the ones left out)."""),
    ("code", EXERCISE),
    ("code", CHECK),
]

WALKTHROUGH = Walkthrough(
    name="10-many-tools",
    title="Many tools: a catalogue bigger than one request",
    cells=CELLS,
    answer='answer = ["create_pull_request"]',
    wrong_answer='answer = ["create_pull_request", "delete_pull_request", "archive_pull_request"]',
    timeout=120,
    files=("10-many-tools.json",),
)
