"""05-elicitation: a tool that asks the person mid-call (form and URL modes), every way the
question can end, and the wait kept out of the tool's timeout."""

from __future__ import annotations

from nbagent.examples.cells import CellKind
from nbagent.examples.walkthroughs import Walkthrough

SETUP = '''from nbagent.examples.walkthroughs.kit import workspace, autopilot, check, data

# How long a question may wait: short when the autopilot answers, a minute for you to click.
WAIT = 4 if AUTOPILOT else 60
CONFIG = f"""
model = "replay:{data('05-elicitation.json')}"
approval_policy = "full-auto"     # approvals are 04's subject: here every call runs
elicitation_timeout_sec = {WAIT:<8}# a question nobody answers is settled after this

[mcp_servers.rooms]               # book_room (form), link_calendar (URL), crunch (no question)
command = $python
args = ["-m", "nbagent.examples.elicit_server", "--record", "received.jsonl"]
protocol = "legacy"               # the server pushes elicitation/create mid-call
tool_timeout_sec = 1.5            # every call gets 1.5 s of the server's own time
"""
work = workspace("05-elicitation", CONFIG)
(work / "received.jsonl").unlink(missing_ok=True)   # the server's record starts empty on every run'''

READY = '''import asyncio, json
from pathlib import Path
import nbagent.notebook as nb
from nbagent.protocol import ElicitationResponse, ListMcpTools

session = await nb.ready()
await session.perform(ListMcpTools())

# What a person would do with each question, in order: (action, after how many seconds).
# The first answer comes later than the tool timeout; the fourth question is left unanswered.
PLAN = [("accept", 2.5), ("decline", 0), ("cancel", 0), None, ("accept", 0)]
FORM = {"date": "2026-12-02", "people": 6, "projector": True}
answered = []
def respond(msg):
    if msg.type != "elicitation_requested":
        return None
    step = PLAN[len(answered)] if len(answered) < len(PLAN) else None
    answered.append(msg.request_id)
    if step is None:
        return None
    action, after = step
    op = ElicitationResponse(request_id=msg.request_id, action=action, by="code",
                             content=FORM if action == "accept" and msg.mode == "form" else None)
    if after:  # a person takes a while: the op arrives later, from the event loop
        asyncio.get_running_loop().call_later(after, session.submit, op)
        return None
    return op
autopilot(session, respond, on=AUTOPILOT)

asks, ends = [], []                                # every question asked, every call's end
session.subscribe(lambda e: e.msg.type == "elicitation_requested" and asks.append(e))
session.subscribe(lambda e: e.msg.type == "tool_call_end" and ends.append(e.msg))
def received():
    return [json.loads(line) for line in Path("received.jsonl").read_text().splitlines()]
print({name: status.state for name, status in session.snapshot().servers.items()})'''

FORM_ASK = '''ask = asks[0].msg
print("server:", ask.server, "| mode:", ask.mode, "| during call:", ask.call_id)
print("message:", ask.message)
print("requestedSchema:", json.dumps(ask.requested_schema, indent=1))'''

TIMEOUT = '''resolved = [i for i in session.snapshot().items if i.type == "elicitation"]
print("the question for Ada ended:", resolved[0].action, "by", resolved[0].by, resolved[0].content)
for end in ends:
    print(f"{end.tool:22} {end.status:9} {end.duration_ms / 1000:4.1f} s  {end.output[:70]}")
print("\\ntool_timeout_sec:", session.snapshot().mcp_servers["rooms"].tool_timeout_sec)'''

OUTCOMES = '''print("how each question ended (nbagent's record):")
for item in [i for i in session.snapshot().items if i.type == "elicitation"]:
    print(f"   {item.action:8} by {item.by:8} {item.message or ''}")
print("\\nwhat the server received:")
for line in received():
    print("  ", line["tool"], line.get("room") or line.get("provider", ""), "->", line.get("action", "ran"), line.get("content") or "")'''

MODEL_SAW = '''from nbagent.models.responses import to_input_items

print("thread items, as nbagent keeps them:", [i.type for i in session.snapshot().items][-8:])
sent = to_input_items(session.snapshot().items)
print("\\nthe same items projected for a model request:", [i["type"] for i in sent][-6:])
print("\\nthe model read, call by call:")
for item in sent:
    if item["type"] == "function_call_output":
        print("  ", item["output"][:100])'''

URL = '''for event in asks:
    if event.msg.mode == "url":
        print("URL question shown:", event.msg.message, "->", event.msg.url)
warnings = [i for i in session.snapshot().items if i.type == "elicitation"][-1]
print("the javascript: link:", warnings.action, "by", warnings.by)
print("the server received:", [(r["provider"], r["action"]) for r in received() if r["tool"] == "link_calendar"])'''

EXERCISE = """# Code that answers a question for a person (as this notebook's autopilot does) may take the
# server's defaults. Write fill(requested_schema, content): a new dict holding `content`'s fields,
# plus the schema's `default` for each field that `content` leaves out or sets to None. `content`
# may itself be None (accept with nothing filled in); leave it unchanged.
answer = ..."""

CHECK = r"""import copy
from nbagent.mcp.elicitation import apply_defaults

def refuse(why):
    raise AssertionError(f"Not yet: {why}")

ROOM = {"type": "object", "properties": {
    "date": {"type": "string", "format": "date"},
    "people": {"type": "integer", "minimum": 1, "default": 2},
    "projector": {"type": "boolean", "default": False},
    "floor": {"type": "string", "enum": ["1", "2", "3"], "default": "2"},
    "dishes": {"type": "array", "items": {"type": "string", "enum": ["soup", "salad"]}, "default": ["soup"]},
    "note": {"type": "string"}}, "required": ["date"]}
CASES = [
    ("some fields given", ROOM, {"date": "2027-01-04", "people": 8}),
    ("a field set to None", ROOM, {"date": "2027-01-04", "floor": None}),
    ("a default of False given as True", ROOM, {"date": "2027-01-04", "projector": True}),
    ("no content at all", ROOM, None),
    ("no defaults in the schema", {"type": "object", "properties": {"ok": {"type": "boolean"}}}, {}),
]

def fills_right(fn):
    if not callable(fn):
        refuse(f"`answer` is a {type(fn).__name__}; it should be the function itself (`answer = fill`, no call)")
    if "apply_defaults" in getattr(getattr(fn, "__code__", None), "co_names", ()):
        refuse("it calls apply_defaults, which does the whole job; write the rule yourself")
    for label, schema, content in CASES:
        given = copy.deepcopy(content)
        try:
            got = fn(copy.deepcopy(schema), given)
        except Exception as exc:
            refuse(f"with {label} it raised {type(exc).__name__}: {exc}")
        if not isinstance(got, dict):
            refuse(f"with {label} it returned a {type(got).__name__}; return the content, a dict")
        if given != content:
            refuse(f"with {label} it changed the content it was given; return a new dict")
        if got is given:
            refuse(f"with {label} it returned the very dict it was given; return a new one")
        if got != apply_defaults(schema, content):
            refuse(f"with {label} the answer differs from what the person's form would send: which fields "
                   "does a default fill, and which does it leave alone?")
    return True

check(answer, fills_right,
      hint="see the message above",
      why="a default is the server's suggestion: the form shows it pre-filled, and code answering for someone may "
          "choose it, but the session never adds it to what a person sent; it only checks that answer against the schema.")"""

CELLS: list[tuple[CellKind, str]] = [
    ("markdown", """# 05 · Elicitation: a tool that asks the person mid-call

## The problem the boundary solves

Some tools cannot finish from the model's arguments alone. Booking a room needs the person to
pick the day; connecting a calendar needs the person to authorise it in their browser. MCP lets a
server ask (`elicitation/create`) *while its `tools/call` is still open*. The runtime then has to:
show the question to the person (not the model), check the answer against the server's schema,
end every question exactly once — accepted, declined, cancelled, or timed out — record how, and
not let the person's thinking time count against the tool's own timeout, or every slow answer
would kill the call it belongs to."""),
    ("markdown", """## A live demonstration

`nbagent/examples/elicit_server.py` is a meeting-rooms server; it appends what it received to
`received.jsonl`. Its calls get `tool_timeout_sec = 1.5`; a question nobody answers is settled
after `elicitation_timeout_sec` (4 s with the autopilot on, 60 s when you click)."""),
    ("code", SETUP),
    ("code", "%load_ext nbagent"),
    ("markdown", """With the autopilot on, the next cell answers each question with the op the form's
buttons send. Its first answer arrives 2.5 s after the question — longer than the tool's whole
timeout. With it off, you fill in the form instead (take your time: the call waits)."""),
    ("code", READY),
    ("markdown", """### A form question, and the wait kept out of the timeout

`book_room` works 0.3 s, asks, then works 0.3 s more. `crunch` only works, for 3 s."""),
    ("code", "%%agent --wait\nBook room Ada for tomorrow's standup, then crunch the attendance numbers."),
    ("markdown", """The server's question as nbagent received it — a message and a `requestedSchema` the form
is built from (the answer is checked against it before it is sent back):"""),
    ("code", FORM_ASK),
    ("code", TIMEOUT),
    ("markdown", """`book_room` took longer than `tool_timeout_sec` and still completed: while a question is
open the call's deadline is paused (`CallControl.pause()` in `nbagent/mcp/deadline.py`) and
resumed with the time it had left. `crunch`, which asked nothing, was stopped at 1.5 s."""),
    ("markdown", """### Decline, cancel, and nobody answering

Three more bookings. The first question is declined, the second cancelled, the third left
alone until `elicitation_timeout_sec` passes (in a browser: *Decline*, *Cancel*, then wait)."""),
    ("code", "%%agent --wait\nBook Babbage, Curie and Dijkstra."),
    ("code", OUTCOMES),
    ("markdown", """## "What the model saw" vs what the server sent

The question and the person's answer go between the server and the person. nbagent records them
(the `elicitation` items), but `to_input_items` — the projection of the thread a model request
is built from — leaves them out: the model reads only each tool's output, in the server's words."""),
    ("code", MODEL_SAW),
    ("markdown", """### URL mode

A URL question carries no form: the person opens the link, acts there, and answers only
*accept* / *decline* / *cancel*; no content goes back. The link is a server's text, so nbagent
shows it only if it is an `http(s)` link — `javascript:` is declined by policy, never rendered."""),
    ("code", "%%agent --wait\nLink my calendar, and the old one too."),
    ("code", URL),
    ("markdown", """## Where this lives in Codex

In openai/codex at commit `608b8b1cc6ce` (each link names the commit and the lines):

- [`codex-rs/core/src/session/mcp.rs` L85-L198](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/session/mcp.rs#L85-L198) — `request_mcp_server_elicitation` parks the server's question as a
  pending entry of the active turn and emits the request event; [L204-L233](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/session/mcp.rs#L204-L233) `resolve_elicitation`
  delivers the front end's answer back to it.
- [`codex-rs/codex-mcp/src/connection_manager.rs` L104-L269](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/connection_manager.rs#L104-L269) — the manager that holds each server's client; `resolve_elicitation`
  falls back to it for a question no active turn holds, and the response reaches the server
  through it.
- [`codex-rs/core/src/mcp_tool_call.rs` L1156-L1329](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/mcp_tool_call.rs#L1156-L1329) — the call the question belongs to; Codex also sends its own MCP
  tool-approval questions through `request_mcp_server_elicitation`, one mechanism for both
  (as nbagent's `PendingAsks` is)."""),
    ("markdown", """## Where this lives in nbagent

- `nbagent/mcp/server_requests.py` — receives `elicitation/create`, pauses the call's deadline while
  the question is open (`CallControl`, `nbagent/mcp/deadline.py`), returns the `ElicitResult`.
- `nbagent/core/elicitation.py` — `ElicitationDesk`: refuses non-web links, checks answers,
  records every ending (`ElicitationRecord`).
- `nbagent/core/pending.py` — one mechanism for approvals and questions: timeout → `cancel`,
  no one to ask → `decline`, interrupt.
- `nbagent/mcp/elicitation.py` — `validate_content`: the answer against the server's schema,
  taken exactly as given (a form pre-fills the defaults; `apply_defaults` is for code answering
  on someone's behalf).
- `nbagent/protocol/elicitation.py` — the form model a `requestedSchema` is read into.
- `nbagent/notebook/elicitation.py` — the form you saw.
- `nbagent/models/responses.py` — `to_input_items`: what of the thread a model request carries."""),
    ("markdown", """## Exercise

A form question's `requestedSchema` may carry a `default` per field. Write what answering code
does with them; the check runs your function on questions this server never asked."""),
    ("code", EXERCISE),
    ("code", CHECK),
]

WALKTHROUGH = Walkthrough(
    name="05-elicitation",
    title="Elicitation: a tool that asks the person mid-call",
    cells=CELLS,
    answer=(
        "answer = lambda schema, content: {**(content or {}), **{name: field['default'] for name, field in "
        "schema['properties'].items() if field.get('default') is not None and (content or {}).get(name) is None}}"
    ),
    wrong_answer="answer = lambda schema, content: {**(content or {}), **{n: f['default'] for n, f in schema['properties'].items() if 'default' in f}}",
    timeout=120,
    files=("05-elicitation.json",),
)
