"""06-metadata-and-results: the ``_meta`` a server receives with each call, and each kind of
result (text, image, resource, structured, error, too long) as the model receives it."""

from __future__ import annotations

from nbagent.examples.cells import CellKind
from nbagent.examples.walkthroughs import Walkthrough

SETUP = '''from nbagent.examples.walkthroughs.kit import workspace, autopilot, check, data

CONFIG = f"""
model = "replay:{data('06-metadata-and-results.json')}"
approval_policy = "full-auto"     # approvals are 04's subject: here every call runs
tool_output_max_bytes = 1024      # the most of one result the model may read

[mcp_servers.meta]                # records the _meta it receives and the result it sends
command = $python
args = ["-m", "nbagent.examples.meta_server", "--record", "wire.jsonl"]
"""
work = workspace("06-metadata-and-results", CONFIG)
(work / "wire.jsonl").unlink(missing_ok=True)   # the server's record starts empty on every run'''

READY = '''import json
from pathlib import Path
import nbagent.notebook as nb

from nbagent.protocol import ListMcpTools
session = await nb.ready()
await session.perform(ListMcpTools())
autopilot(session, lambda msg: None, on=AUTOPILOT)    # nothing here asks: full-auto, and no questions

progress = []                           # progress notifications, as nbagent routed them
session.subscribe(lambda e: e.msg.type == "progress" and progress.append(e.msg))
def wire():
    """What the server recorded: per call, the _meta it received and the result it sent."""
    return [json.loads(line) for line in Path("wire.jsonl").read_text().splitlines()]
def outputs():
    return {i.call_id: i for i in session.snapshot().items if i.type == "function_call_output"}
print({name: status.state for name, status in session.snapshot().servers.items()})'''

META = '''calls = [i for i in session.snapshot().items if i.type == "function_call" and i.name == "mcp__meta__whoami"]
print("thread:", session.snapshot().thread_id)
for call, line in zip(calls, [l for l in wire() if l["tool"] == "whoami"]):
    print(f"\\nnbagent's call {call.call_id} in turn {call.turn_id}; the server received _meta:")
    for key, value in line["meta"].items():
        print(f"   {key:18} {value}")'''

TRACE = '''from nbagent.calls.trace import trace_id_for_turn, is_valid_traceparent

first, second = [l["meta"] for l in wire() if l["tool"] == "whoami"][:2]
for meta in (first, second):
    _, trace, span, _ = meta["traceparent"].split("-")
    print(f"trace {trace}  span {span}  valid={is_valid_traceparent(meta['traceparent'])}")
print("trace id = trace_id_for_turn(turn id):", trace == trace_id_for_turn(first["nbagent/turnId"]))
print("\\nthe progressToken each call carried, and the progress nbagent routed to that call's card:")
for meta in (first, second):
    call_id = meta["nbagent/callId"]
    print(f"   token {meta['progressToken']!r}: {call_id} <- {[(p.progress, p.total, p.message) for p in progress if p.call_id == call_id]}")
print("\\nkeys nbagent wrote:", sorted(k for k in first if k.startswith("nbagent/") or k == "traceparent"))
print("keys the MCP client library wrote:", sorted(k for k in first if not k.startswith("nbagent/") and k != "traceparent"))'''

RESULTS = '''from nbagent.models.responses import to_input_items

def short(value):
    text = json.dumps(value)
    return text if len(text) < 150 else text[:120] + f"... ({len(text)} characters)"

by_call = outputs()
sent_items = {i["call_id"]: i for i in to_input_items(session.snapshot().items) if i["type"] == "function_call_output"}
rest = [i for i in session.snapshot().items if i.type == "function_call" and i.name != "mcp__meta__whoami"]
for call, line in zip(rest, [l for l in wire() if l["tool"] != "whoami"]):
    out = by_call[call.call_id]
    print(f"== {line['tool']}")
    print("   server sent:   ", short(line["sent"]))
    print("   model read:    ", short(out.output), "| is_error:", out.is_error, "| status:", out.status)
    if not isinstance(sent_items[call.call_id]["output"], str):
        print("   request parts: ", [part["type"] for part in sent_items[call.call_id]["output"]])'''

STRUCTURED = '''import mcp_types
from nbagent.core.tool_output import render_for_model
from nbagent.mcp.results import from_call_result, explain_error

schema = next(s for s in session.snapshot().tools if s.raw_name == "stats").output_schema
print("stats declares outputSchema:", json.dumps(schema)[:100], "...")
lying = mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text="41 passed")],
                                 structured_content={"passed": "many", "failed": 1, "slowest": "?"})
print("\\na result that does not match it, as the model would read it:")
print(render_for_model(from_call_result(lying, schema)))
print("\\nwhat an SDK server says when a tool crashes, and what the model reads instead:")
print(explain_error("Error executing tool stats"))'''

TRUNCATION = '''dump = next(l for l in wire() if l["tool"] == "dump")
out = next(o for o in outputs().values() if "compiling" in o.output)
sent = dump["sent"]["content"][0]["text"]
print("server sent:", len(sent.encode()), "bytes; the model read:", len(out.output.encode()), "bytes",
      f"(tool_output_max_bytes = {session.snapshot().tool_output_max_bytes})")
lines = out.output.splitlines()
cut = next(n for n, line in enumerate(lines) if "bytes cut" in line)
print("\\n".join(["..."] + lines[cut - 2:cut + 3] + ["..."]))
print("\\nthe rollout keeps the full block for the card:", len(out.content[0].text.encode()), "bytes")'''

EXERCISE = """# Write the wrapper: wrap(result) takes a CallToolResult as it comes over the wire (a dict:
# "content", a list of blocks; maybe "structuredContent" and "isError") and returns the text the
# model reads, before any byte cap. The rules are in the markdown cell above.
answer = ..."""

CHECK = r"""import base64
import mcp_types
from nbagent.core.tool_output import render_for_model
from nbagent.mcp.results import from_call_result

def refuse(why):
    raise AssertionError(f"Not yet: {why}")

def text(t):
    return {"type": "text", "text": t}

PIXEL = base64.b64encode(bytes(range(37))).decode()
CASES = [
    ("one text block", {"content": [text("3 tests collected")]}),
    ("two text blocks", {"content": [text("line one"), text("line two")]}),
    ("an error", {"content": [text("disk full: /tmp")], "isError": True}),
    ("an image after a text", {"content": [text("the chart:"), {"type": "image", "data": PIXEL, "mimeType": "image/webp"}]}),
    ("an embedded resource", {"content": [{"type": "resource", "resource": {"uri": "file:///ci/log.txt", "text": "ok"}}]}),
    ("structured content no text says", {"content": [text("done")], "structuredContent": {"passed": 41, "note": "été"}}),
    ("structured content a text block already says",
     {"content": [text('{"passed": 41, "failed": 0}')], "structuredContent": {"failed": 0, "passed": 41}}),
    ("structured content and no blocks", {"content": [], "structuredContent": {"ids": [1, 2]}}),
]

def wraps_right(fn):
    if not callable(fn):
        refuse(f"`answer` is a {type(fn).__name__}; it should be the function itself (`answer = wrap`, no call)")
    for label, wire in CASES:
        wanted = render_for_model(from_call_result(mcp_types.CallToolResult.model_validate(wire)))
        try:
            got = fn(json.loads(json.dumps(wire)))
        except Exception as exc:
            refuse(f"for a result with {label} it raised {type(exc).__name__}: {exc} "
                   "(the result is a dict: result['content'], block['type'], result.get('structuredContent'))")
        if not isinstance(got, str):
            refuse(f"for a result with {label} it returned a {type(got).__name__}; return the text, a str")
        if got != wanted:
            refuse(f"for a result with {label}, the model would read something else; check the rule for that case")
    return True

check(answer, wraps_right,
      hint="see the message above",
      why="every shape a server sends becomes text the model can read, with nothing said twice; "
          "the image itself also goes to the model as a part of its own, and is_error travels beside the text.")"""

CELLS: list[tuple[CellKind, str]] = [
    ("markdown", """# 06 · Metadata and results: what crosses the boundary each way

## The problem the boundary solves

A tool call crosses the runtime's boundary twice. **Out**, the server should know whose call this
is — thread, turn, call — so its own logs and traces line up with the agent's, and where to send
progress; yet nothing else of the runtime (no secrets, no history) may leak. **Back**, the server
answers in many shapes — text, images, embedded resources, structured JSON, errors, something
far too long — and all of it is untrusted data. The runtime has to turn each into something the
model can read, keep the full result for the person, say what it cut, and never hide a failure.
This is the "result backfill" step: the tool result becomes a history item the next model request
is projected from."""),
    ("markdown", """## A live demonstration

`nbagent/examples/meta_server.py` records, for every call, the `_meta` it received and the exact
`CallToolResult` it sent, in `wire.jsonl`. The model may read at most 1024 bytes of one result."""),
    ("code", SETUP),
    ("code", "%load_ext nbagent"),
    ("code", READY),
    ("code", "%%agent --wait\nWhy is the build slow?"),
    ("markdown", """### `_meta` as the server receives it

Two calls of `whoami` in the same model round. nbagent wrote the thread, the turn and the call id
under its own `nbagent/` prefix, and a W3C `traceparent`. The rest belongs to the protocol: the
`io.modelcontextprotocol/` envelope the 2026-07-28 protocol puts on every request (the MCP client
library's stamp, which a stdio connection copies onto the `tools/call` it sends itself; nbagent
never writes that prefix of its own), and the `progressToken`. nbagent's `call_meta` proposes the
call id as the token, but the request's own id is the token, as the library does for its
requests (`call-N-` and a random tail): the connection hands each progress notification with that
token to the callback of that call — so the progress still lands on the right card."""),
    ("code", META),
    ("code", TRACE),
    ("markdown", """Both calls sit on one trace (one per turn) with a span each. A new turn is a new trace:"""),
    ("code", "%%agent --wait\nOnce more."),
    ("code", '''print([l["meta"]["traceparent"] for l in wire() if l["tool"] == "whoami"])'''),
    ("markdown", """## "What the model saw" vs what the server sent

For every other call: the result the server sent, the text the model read (`FunctionCallOutput.output`,
at most `tool_output_max_bytes`), and — where it is not plain text — the parts of the model
request it became. An image is described in the text *and* sent as an `input_image` part; an
embedded resource is named by its URI; structured content the text already says is not repeated;
an error is still a result the model reads, marked `is_error`."""),
    ("code", RESULTS),
    ("markdown", """### Structured content that breaks its own schema, and errors that say nothing

A server's `outputSchema` is checked (its regular expressions are never run), and a mismatch is
told to the model next to the content, not hidden. An SDK server answers a crash with only
`Error executing tool NAME`: the model is told what that means."""),
    ("code", STRUCTURED),
    ("markdown", """### Truncation

The log is far longer than the model may read. It keeps the head and the tail around a marker
saying how much was cut; the rollout keeps the full block (up to `rollout_output_max_bytes`) so
the card can show it."""),
    ("code", TRUNCATION),
    ("markdown", """## Where this lives in Codex

In openai/codex at commit `608b8b1cc6ce` (each link names the commit and the lines):

- [`codex-rs/core/src/mcp_tool_call.rs` L106-L292](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/mcp_tool_call.rs#L106-L292) (`handle_mcp_tool_call`) — builds the request `_meta` of each call, wraps
  the call in a tracing span, and sanitises the result for the model (images only for a model that
  accepts them); [L701-L747](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/mcp_tool_call.rs#L701-L747) adds the sandbox state to `_meta` for a server that asks for it.
- [`codex-rs/codex-mcp/src/runtime.rs` L20-L30](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/runtime.rs#L20-L30) (`SandboxState`) — that sandbox payload.
- [`codex-rs/codex-mcp/src/connection_manager.rs` L632-L668](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/connection_manager.rs#L632-L668) (`call_tool`) — sends `tools/call` with that `_meta` to the right server.
- [`codex-rs/core/src/tools/handlers/mcp.rs` L116-L156](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/tools/handlers/mcp.rs#L116-L156) (`handle`) — `McpHandler` wraps the result as the tool output the model
  reads, with the turn's truncation policy."""),
    ("markdown", """## Where this lives in nbagent

- `nbagent/mcp/meta.py` — `call_meta` (the keys, reserved prefixes dropped).
- `nbagent/calls/trace.py` — `trace_id_for_turn`, `new_traceparent`: the same for every tool source.
- `nbagent/mcp/manager.py` — builds each call's `_meta` (`call_meta`) and sends the `tools/call`
  with a progress callback of that call's own.
- `nbagent/mcp/results.py` — `from_call_result` (schema check, error text).
- `nbagent/core/tool_output.py` — `render_for_model`, `truncate_utf8`: what the model reads of any
  tool's result.
- `nbagent/mcp/convert.py` — MCP content blocks to nbagent's.
- `nbagent/core/tool_call.py` — the output item: the capped model view beside the rollout's blocks.
- `nbagent/models/responses.py` — `to_input_items`: how the item is sent (images as parts)."""),
    ("markdown", """## Exercise

Write the result wrapper the cells above showed at work, without the byte cap, the schema check
and the error explanations. One part per content block, joined by newlines: a text block's text
as is; an image as `[image: MIME, N bytes]`, N its decoded size; an embedded resource as
`[resource: URI]` with its text, if any, on the next line. Then the structured content, as
compact JSON (no spaces, non-ASCII kept), unless some text block already is that same JSON. The
check runs your function on results this notebook has not shown."""),
    ("code", EXERCISE),
    ("code", CHECK),
]

WALKTHROUGH = Walkthrough(
    name="06-metadata-and-results",
    title="Metadata and results: what crosses the boundary each way",
    cells=CELLS,
    answer=(
        "answer = lambda r: '\\n'.join([b['text'] if b['type'] == 'text' else "
        "f\"[image: {b['mimeType']}, {len(base64.b64decode(b['data']))} bytes]\" if b['type'] == 'image' else "
        "'\\n'.join([f\"[resource: {b['resource']['uri']}]\", *([b['resource']['text']] if 'text' in b['resource'] else [])]) "
        "for b in r['content']] + ([json.dumps(r['structuredContent'], separators=(',', ':'), ensure_ascii=False)] "
        "if 'structuredContent' in r and not any(b['type'] == 'text' and b['text'][:1] in '{[' "
        "and json.loads(b['text']) == r['structuredContent'] for b in r['content']) else []))"
    ),
    wrong_answer="answer = lambda r: '\\n'.join(b.get('text', '') for b in r['content'])",
    timeout=120,
    files=("06-metadata-and-results.json",),
)
