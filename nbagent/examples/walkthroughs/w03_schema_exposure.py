"""03-schema-exposure: a server's ``inputSchema`` vs the ``parameters`` the model receives —
what the sanitiser drops, rewrites or makes strict, and why."""

from __future__ import annotations

from nbagent.examples.cells import CellKind
from nbagent.examples.walkthroughs import Walkthrough

SETUP = '''from nbagent.examples.walkthroughs.kit import workspace, autopilot, check, data

CONFIG = f"""
model = "replay:{data('03-schema-exposure.json')}"
approval_policy = "full-auto"     # approvals are another walkthrough's subject

[mcp_servers.schema]              # one rich schema, one already strict
command = $python
args = ["-m", "nbagent.examples.schema_server", "--record", "calls.jsonl"]
"""
work = workspace("03-schema-exposure", CONFIG)
(work / "calls.jsonl").unlink(missing_ok=True)   # the servers' record starts empty on every run'''

READY = '''import nbagent.notebook as nb
from nbagent.protocol import ApprovalDecision, ListMcpTools

session = await nb.ready()
await session.perform(ListMcpTools())
autopilot(session, lambda msg: ApprovalDecision(call_id=msg.call_id, decision="approve")
          if msg.type == "approval_requested" else None, on=AUTOPILOT)

specs = {spec.raw_name: spec for spec in session.snapshot().tools if spec.server == "schema"}
book, city = specs["book_trip"], specs["lookup_city"]
print("servers:", {name: status.state for name, status in session.snapshot().servers.items()})'''

RAW_PROBLEMS = '''import json
from nbagent.schema import openai_schema_problems

raw = book.input_schema              # exactly what the server sent in tools/list
print("top-level keys the server sent:", list(raw))
print("\\nwhat the model API would refuse in it:")
for problem in openai_schema_problems(raw):
    print("  ", problem)'''

DIFF = '''exposed = book.parameters
print("top-level keys the model gets:", list(exposed), "\\n")
for name, schema in raw["properties"].items():
    print(f"{name:10} server: {json.dumps(schema)}")
    print(f"{'':10} model:  {json.dumps(exposed['properties'][name])}")'''

WARNINGS = '''print("told to the user (the tool's warnings):")
for warning in book.warnings:
    print("  ", warning)
print("\\nthe exposed schema has no API problems left:", openai_schema_problems(exposed) == [])'''

STRICT = '''from nbagent.schema import make_strict

for spec in (book, city):
    optional = sorted(set(spec.parameters["properties"]) - set(spec.parameters.get("required", [])))
    print(f"{spec.raw_name:12} strict={spec.strict}  optional properties: {optional}")
print("\\nmake_strict(book_trip) =", make_strict(book.parameters), " (strict would force the model to invent every optional value)")'''

MODEL_SAW = '''from IPython.utils.capture import capture_output

with capture_output() as shown:          # the last model request, as nbagent sent it
    %agent inspect request --json
sent = {tool["name"]: tool for tool in json.loads(shown.stdout)["tools"]}
print(json.dumps(sent[city.name], indent=1))
print("\\nbook_trip in the request: strict =", sent[book.name]["strict"],
      "| its parameters are the exposed schema:", sent[book.name]["parameters"] == exposed)'''

SERVER_GOT = '''from pathlib import Path
from nbagent.mcp.validation import compiled

received = [json.loads(line) for line in Path("calls.jsonl").read_text().splitlines()]
bookings = [line for line in received if line["tool"] == "book_trip"]
booking = bookings[0]["arguments"]
call = next(item for item in session.snapshot().items if item.type == "function_call" and item.name == book.name)
print("the server received the model's arguments unchanged:", booking == json.loads(call.arguments))
print(json.dumps(booking))

def problems(schema, value):
    return [f"{'/'.join(map(str, e.instance_path)) or '(root)'}: {e.message}" for e in compiled(schema).iter_errors(value)]

print("\\nagainst the schema the model saw:   ", problems(exposed, booking) or "valid")
print("against the schema the server sent: ")
for problem in problems(raw, booking):
    print("  ", problem[:150])'''

BACKFILL = '''for line in bookings:
    print("server:", line.get("rejected", "accepted"))
for item in session.snapshot().items:
    if item.type == "function_call_output":
        print(f"model read (is_error={item.is_error}):", item.output[:110])'''

EXERCISE = """# Write `book_trip` arguments (a dict) that the schema the model saw accepts and the server's own
# schema refuses, for a reason the model's booking above did not already show (not `payment`,
# not `flexible`). `booking`, the model's arguments, is a valid start to change.
answer = ..."""

CHECK = r"""def refuse(why):
    raise AssertionError(f"Not yet: {why}")

def slips_through(arguments):
    if not isinstance(arguments, dict):
        refuse(f"`answer` is a {type(arguments).__name__}; a tool's arguments are a JSON object, a dict")
    seen = problems(exposed, arguments)
    if seen:
        refuse(f"the model could not send that: the schema it saw refuses it ({'; '.join(seen)[:200]})")
    refused = {str(e.instance_path[0]) if e.instance_path else "(root)" for e in compiled(raw).iter_errors(arguments)}
    if not refused:
        refuse("the server's schema accepts it too; which keywords did the side-by-side view drop or loosen?")
    if refused <= {"payment", "flexible"}:
        refuse("the server refuses it only where the model's booking already showed a gap; find another")
    return True

check(answer, slips_through,
      hint="see the message above",
      why="every keyword the API cannot take is a constraint only the server still enforces; nbagent passes the "
          "model's arguments on unchanged, so the server's refusal comes back as a result the model reads.")"""

CELLS: list[tuple[CellKind, str]] = [
    ("markdown", """# 03 · Schema exposure: the server's inputSchema vs what the model receives

## The problem the boundary solves

An MCP server describes its arguments in any JSON Schema it likes — `$ref` into `$defs`, `oneOf`,
`const`, `prefixItems`, `nullable`, formats of its own. The model API takes a small subset and
*refuses the whole request* over one keyword it does not accept. One careless server must not
break every turn, and a tool must not silently become uncallable.

So nbagent keeps both schemas. The server's `inputSchema` stays as sent (it is what approvals
are hashed over and what edited arguments are checked against). The model gets a **sanitised**
copy: what constrains the arguments in a form the API takes, rewrites where the meaning survives,
drops with a warning where it does not — and **strict** mode only where it changes nothing."""),
    ("markdown", "## A live demonstration\n\nOne real MCP server, `nbagent/examples/schema_server.py`: `book_trip` with a rich schema, `lookup_city` with one that is already strict. It records every call in `calls.jsonl`."),
    ("code", SETUP),
    ("code", "%load_ext nbagent"),
    ("code", READY),
    ("markdown", "### What the server sent\n\nSent to the API as is, `book_trip`'s schema would fail the request:"),
    ("code", RAW_PROBLEMS),
    ("markdown", """### Raw -> exposed, property by property

Read each pair: `$ref` is inlined (the definition copied where it is used, `$defs` gone);
`const` becomes a one-value `enum`; a missing `type` is inferred from the `enum`; `oneOf`
becomes `anyOf`; `allOf` is merged into one schema; `nullable` becomes a `null` type; tuple
`prefixItems` becomes `items`; `uniqueItems`, `examples` and `$schema` are dropped silently (too
minor to tell anyone); `patternProperties`, `not` and the unknown format are dropped *with* a
warning."""),
    ("code", DIFF),
    ("code", WARNINGS),
    ("markdown", """### Strict, only where it keeps the meaning

Strict mode makes the API guarantee arguments that match the schema, but it requires every
property to be required and objects closed. `lookup_city` already is; `book_trip` has optional
properties, and forcing them required would make the model invent values — so it is sent
non-strict."""),
    ("code", STRICT),
    ("markdown", "### A turn that uses them\n\nThe scripted model looks up the city, then books the trip — with a payment that matches *both* `oneOf` branches."),
    ("code", "%%agent --wait\nThe trip-booking test fails: book the trip it expects."),
    ("markdown", """## "What the model saw" vs what the server sent

The first is the tool entry of the last model request, as `%agent inspect request` reads it back;
the second is what the server received, checked against both schemas."""),
    ("code", MODEL_SAW),
    ("code", SERVER_GOT),
    ("markdown", """The arguments reach the server exactly as the model sent them: nbagent does not re-check a
model's arguments, nor "fix" them. What the model's view lost — here `oneOf` exclusivity and the
`not` on `flexible` — only the server's own schema still says, and this server enforces it. Its
refusal comes back as a tool result the model reads (result backfill), so the next model request
carries the reason and the model retries."""),
    ("code", BACKFILL),
    ("markdown", """## Where this lives in Codex

In openai/codex at commit `608b8b1cc6ce` (each link names the commit and the lines):

- [`codex-rs/codex-mcp/src/tools.rs` L141-L249](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/tools.rs#L141-L249) — tool metadata shaping: the model-visible view of a tool is made here,
  while the raw tool ([L30-L56](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/tools.rs#L30-L56), `ToolInfo`) stays for execution.
- [`codex-rs/core/src/tools/handlers/mcp.rs` L226-L250](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/tools/handlers/mcp.rs#L226-L250) (`create_tool_spec`) — builds the Responses API function spec from the tool;
  [L116-L156](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/tools/handlers/mcp.rs#L116-L156) (`handle`) passes the model's arguments on to the call as sent."""),
    ("markdown", """## Where this lives in nbagent

- `nbagent/schema/sanitize/` — `sanitize_schema`: the keyword whitelist (`rules.py`), the rewrites, the
  warnings; it never raises.
- `nbagent/schema/subset.py` — the subset the API takes (`ALLOWED_KEYWORDS`, `FORMATS`, limits).
- `nbagent/schema/check.py` — `openai_schema_problems`, the checker the output is held to.
- `nbagent/schema/strict.py` — `make_strict`: strict only when it keeps the meaning.
- `nbagent/mcp/catalog.py` — builds each `ToolSpec` with `input_schema` (raw) beside
  `parameters` (exposed), sanitising each distinct schema once.
- `nbagent/models/responses.py` — `to_tools`: the `tools` field of the model request."""),
    ("markdown", """## Exercise

Find another gap between the two schemas: arguments a model could send in good faith that the
server refuses."""),
    ("code", EXERCISE),
    ("code", CHECK),
]

WALKTHROUGH = Walkthrough(
    name="03-schema-exposure",
    title="Schema exposure: the server's inputSchema vs what the model receives",
    cells=CELLS,
    answer='answer = dict(booking, payment={"iban": "DE89370400440532013000"}, flexible=True, extras={"x-meal": 1})',
    wrong_answer='answer = dict(booking, flexible=True)',
    timeout=120,
    files=("03-schema-exposure.json",),
)
