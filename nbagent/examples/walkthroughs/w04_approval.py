"""04-approval: policies x per-tool modes x annotations, remembered decisions, and a tool that
changes after it was approved (a rug pull) being asked about again."""

from __future__ import annotations

from nbagent.examples.cells import CellKind
from nbagent.examples.walkthroughs import Walkthrough

SETUP = '''from nbagent.examples.walkthroughs.kit import workspace, autopilot, check, claim, data

CONFIG = f"""
model = "replay:{data('04-approval.json')}"
approval_policy = "on-request"   # ask unless a call is known to be safe

[mcp_servers.approvals]          # peek, tidy, wipe, stamp and the shifting sweep
command = $python
args = ["-m", "nbagent.examples.approval_server", "--record", "ran.jsonl"]
trusted = true                   # take this server's readOnlyHint at its word

[mcp_servers.approvals.tools.stamp]
approval_mode = "approve"        # the person's own rule for one tool
"""
work = workspace("04-approval", CONFIG)
(work / "ran.jsonl").unlink(missing_ok=True)   # the server's record starts empty on every run'''

READY = '''import json
from pathlib import Path
import nbagent.notebook as nb
from nbagent.protocol import ApprovalDecision, ListMcpTools

session = await nb.ready()
await session.perform(ListMcpTools())

# What a person would click, per raw tool; a tool whose definition changed is denied.
CLICKS = {"wipe": "approve_session", "tidy": "always", "sweep": "approve_session"}
def click(msg):
    if msg.type != "approval_requested":
        return None
    decision = "deny" if msg.changed else CLICKS.get(msg.raw_tool, "deny")
    return ApprovalDecision(call_id=msg.call_id, decision=decision)
autopilot(session, click, on=AUTOPILOT)

asked = []                                       # every panel shown, whoever answers it
session.subscribe(lambda event: event.msg.type == "approval_requested" and asked.append(event.msg))
specs = {spec.raw_name: spec for spec in session.snapshot().tools if spec.server == "approvals"}
for name, spec in specs.items():
    a = spec.annotations
    print(f"{name:6} readOnly={a and a.read_only_hint!s:5} destructive={a and a.destructive_hint!s:5} "
          f"trusted={spec.trusted} approval_mode={spec.approval_mode}")'''

TABLE = '''from nbagent.core.approval import ask_reason

POLICIES = ("untrusted", "on-request", "never", "full-auto")
def verdict(spec, policy):
    reason = ask_reason(spec, policy, remembered=False)
    return "runs" if reason is None else ("declined" if policy == "never" else "asks")

for trusted in (True, False):
    print(f"server trusted={trusted}".ljust(16), *(p.ljust(11) for p in POLICIES))
    for name, spec in specs.items():
        spec = spec.model_copy(update={"trusted": trusted})
        print(f"  {name:14}", *(verdict(spec, p).ljust(11) for p in POLICIES))
    print()
print("why peek asks on an untrusted server:", ask_reason(specs["peek"].model_copy(update={"trusted": False}), "on-request", False))
print("why stamp never asks under on-request:", ask_reason(specs["stamp"], "on-request", False))'''

MODES = '''# The person's per-tool approval_mode, against the server's hints (policy on-request, server NOT trusted).
print("approval_mode".ljust(14), *(name.ljust(8) for name in ("peek", "tidy", "wipe", "stamp")))
for mode in ("auto", "prompt", "approve", "writes"):
    row = [specs[n].model_copy(update={"trusted": False, "approval_mode": mode}) for n in ("peek", "tidy", "wipe", "stamp")]
    print(mode.ljust(14), *(verdict(spec, "on-request").ljust(8) for spec in row))'''

RECORDS = '''def approvals(items):
    return [(i.raw_tool, i.decision, i.by) for i in items if i.type == "approval"]

print("panels shown:", [(m.raw_tool, m.reason) for m in asked])
print("recorded decisions (tool, decision, by):")
for row in approvals(session.snapshot().items):
    print("  ", row)
print("\\nthe server ran:", [(r["tool"], r["folder"]) for r in map(json.loads, Path("ran.jsonl").read_text().splitlines())])
decided = approvals(session.snapshot().items)
claim(decided == [("wipe", "approve_session", "code"), ("wipe", "approve", "remembered"), ("tidy", "always", "code")],
      "wipe was approved for the session, its second call ran remembered, and tidy was approved Always",
      otherwise=f"the decisions were {decided}")'''

ALWAYS = '''print(Path("nbagent.toml").read_text().split("[mcp_servers.approvals.tools.tidy]")[1].strip())
from nbagent.core.approval import changed_parts, fingerprint
print("\\nfingerprint(tidy as listed):", fingerprint(specs["tidy"]).model_dump())

# A later session reads that entry back; a tidy whose description changed would be asked about again.
recorded = session.snapshot().mcp_servers["approvals"].approved_definition_for("tidy")
reworded = specs["tidy"].model_copy(update={"description": "Sort a folder's files, and delete the rest."})
print("changed since 'Always', as listed:  ", changed_parts(recorded, fingerprint(specs["tidy"])))
print("changed since 'Always', if reworded:", changed_parts(recorded, fingerprint(reworded)))'''

MODEL_SAW = '''from IPython.utils.capture import capture_output

with capture_output() as shown:                  # the turn's requests, as the inspector shows them
    %agent inspect request --all --json
turn = json.loads(shown.stdout)
print(f"sweep as each of the turn's {len(turn['requests'])} model requests offered it:")
for n, request in enumerate(turn["requests"], turn["dropped"] + 1):
    sweep = next(t for t in request["tools"] if t["name"] == specs["sweep"].name)
    print(f"  request {n}:", list(sweep["parameters"]["properties"]), "-", sweep["description"])

before, after = asked[-2], asked[-1]
print("panel 1 ->", before.description, "| changed:", before.changed)
print("panel 2 ->", after.description)
print("           arguments:", after.arguments, "| annotations:", after.annotations)
print("           changed:", after.changed)

spec = next(s for s in session.snapshot().tools if s.raw_name == "sweep")
print("\\nserver now serves sweep with schema:", json.dumps(spec.input_schema["properties"]))
print("bound hash then / now:", specs["sweep"].definition_hash[:12], "/", spec.definition_hash[:12])

outputs = [i for i in session.snapshot().items if i.type == "function_call_output"]
print("\\nthe model read for the second sweep:", outputs[-1].status, "-", outputs[-1].output)
print("the server's own record of sweep:", [(r["folder"], r["version"]) for r in map(json.loads, Path("ran.jsonl").read_text().splitlines()) if r["tool"] == "sweep"])'''

NEVER = '''last = [i for i in session.snapshot().items if i.type == "approval"][-1]
print((last.raw_tool, last.decision, last.by))
print(last.message)
print("the model read:", [i for i in session.snapshot().items if i.type == "function_call_output"][-1].output)'''

EXERCISE = """# Write the table as a function, for a tool with the default approval_mode ("auto") and no
# decision remembered: decide(policy, annotations, trusted) returns "runs", "asks" or "declined".
# `annotations` is the tool's annotations as its server lists them (None, or a dict that may hold
# "readOnlyHint" and "destructiveHint", each True, False or absent); `trusted` is the server's flag.
answer = ..."""

CHECK = r"""from itertools import product
from nbagent.core.approval import ask_reason
from nbagent.protocol.tools import ToolAnnotations, ToolSpec

def refuse(why):
    raise AssertionError(f"Not yet: {why}")

def real(policy, annotations, trusted):
    hints = None if annotations is None else ToolAnnotations(
        read_only_hint=annotations.get("readOnlyHint"), destructive_hint=annotations.get("destructiveHint"))
    spec = ToolSpec(name="mcp__s__t", source="mcp", server="s", raw_name="t", annotations=hints, trusted=trusted)
    if ask_reason(spec, policy, remembered=False) is None:
        return "runs"
    return "declined" if policy == "never" else "asks"

def table_right(fn):
    if not callable(fn):
        refuse(f"`answer` is a {type(fn).__name__}; it should be the function itself (`answer = decide`, no call)")
    hints = [None, {}, {"readOnlyHint": True}, {"readOnlyHint": False}, {"destructiveHint": True},
             {"readOnlyHint": True, "destructiveHint": True}, {"readOnlyHint": True, "destructiveHint": False}]
    for policy, annotations, trusted in product(("on-request", "never", "untrusted", "full-auto"), hints, (True, False)):
        wanted = real(policy, annotations, trusted)
        try:
            got = fn(policy, None if annotations is None else dict(annotations), trusted)
        except Exception as exc:
            refuse(f"decide({policy!r}, {annotations!r}, {trusted}) raised {type(exc).__name__}: {exc} "
                   "(annotations may be None, and a hint may be absent: `.get`)")
        if got not in ("runs", "asks", "declined"):
            refuse(f"decide({policy!r}, {annotations!r}, {trusted}) returned {got!r}; return 'runs', 'asks' or 'declined'")
        if got != wanted:
            case = f"decide({policy!r}, {annotations!r}, trusted={trusted}) is not {got!r}"
            if policy in ("full-auto", "untrusted"):
                refuse(f"{case}: under {policy!r} the hints do not matter")
            if not trusted and got == "runs":
                refuse(f"{case}: whose claim is a readOnlyHint, and when does it count?")
            if (annotations or {}).get("destructiveHint") and got == "runs":
                refuse(f"{case}: a tool that says it is destructive is not safe, whatever else it says")
            if policy == "never" and got == "asks":
                refuse(f"{case}: under 'never' there is nobody to ask")
            refuse(f"{case}: what must a trusted server say for a call to be known safe?")
    return True

check(answer, table_right,
      hint="see the message above",
      why="only a trusted server's readOnlyHint, with no destructiveHint, lets a call run by itself; "
          "'never' turns every ask into a decline; a per-tool approval_mode, the person's own word, is weighed before any hint.")"""

CELLS: list[tuple[CellKind, str]] = [
    ("markdown", """# 04 · Approval: who lets a tool call run

## The problem the boundary solves

In "fix a failing test" the model proposes calls — look at a folder, delete temporary files,
upload something — and the runtime, not the model, decides which of them run. The tools come
from MCP servers nbagent does not control: a server's `readOnlyHint` and `destructiveHint` are
*claims*, and a server can change a tool after the person approved it. So the runtime needs a
rule it can state in one table, a record for every decision, memory for "don't ask me again",
and that memory bound to *what was approved* — not to a name a server can reuse.

nbagent's rule (`nbagent/core/approval.py`): a **policy** for the turn (`untrusted`,
`on-request`, `never`, `full-auto`), a per-tool **approval mode** from the person's config
(`auto`, `prompt`, `approve`, `writes`), and the tool's **annotations**, which count only when its
server is marked `trusted`."""),
    ("markdown", """## A live demonstration

`nbagent/examples/approval_server.py` serves five tools, one per kind of annotation, and appends
every execution to `ran.jsonl`. The config marks the server trusted and sets `stamp` to
`approval_mode = "approve"`."""),
    ("code", SETUP),
    ("code", "%load_ext nbagent"),
    ("markdown", """The next cell gets the session and, with the autopilot on (the `AUTOPILOT` cell above),
answers each approval panel with the op its button sends: *Approve for session* for `wipe` and
`sweep`, *Always* for `tidy`, *Deny* for a tool whose definition changed. With it off, you click."""),
    ("code", READY),
    ("markdown", """### The table, from the live decision function

`ask_reason(spec, policy, remembered)` is the function every call passes through. Here it is
applied to the live tool specs under each policy, with the server trusted and not. Under `never`
a call that would ask is declined instead — the model is told, nothing hangs."""),
    ("code", TABLE),
    ("markdown", """The per-tool mode is the person's word, so it counts whether or not the server is trusted:
`prompt` always asks, `approve` never does (for an *Always* only while the definition it approved is
unchanged), and `writes` takes the server's `readOnlyHint` at its word for this one tool."""),
    ("code", MODES),
    ("markdown", """### A turn under `on-request`

`peek` runs by itself (read-only, trusted), `stamp` by the person's rule; `wipe` asks — the panel
below shows the server, the raw tool and the model's name for it, the annotations and the
arguments. After *Approve for session*, the second `wipe` runs without a panel: the decision is
remembered. `tidy` asks, and *Always* is written to the config."""),
    ("code", "%%agent --wait\nClean up the build folder."),
    ("code", RECORDS),
    ("markdown", """Every call that needed approval has a recorded decision and who made it: `user` for a
click, `remembered` for the second `wipe`. Calls that needed none (`peek`, `stamp`) have no
approval item — there was nothing to decide.

*Always* wrote the person's answer into the `nbagent.toml` the server came from, with one hash
per part of the definition it approved — so a later session can say *what* changed:"""),
    ("code", ALWAYS),
    ("markdown", """### The rug pull

`sweep` is approved *for this session*. Its first call runs — and the server then replaces it: a
new description, a new `remote` argument, `destructiveHint: true`, and a `tools/list_changed`
notification. The model's next call uses the new argument. The remembered approval is keyed by
the raw identity `(server, tool)` **and bound to the definition hash**, so it no longer applies:
the panel appears again and says what changed."""),
    ("code", "%%agent --wait\nSweep the temporary files."),
    ("markdown", """## "What the model saw" vs what the server sent

What the model was offered of `sweep` in each request of that turn (`%agent inspect request --all`
shows every request of the last turn as sent; `--json` gives it to the cell), the two panels, the definition
the server serves now, the output the model read for the refused call, and the server's own
record of what ran — only version 1, once."""),
    ("code", MODEL_SAW),
    ("markdown", """The request right after the change may still offer the old `sweep`: the server's
`tools/list_changed` starts a re-list that can still be in flight when the model is asked. That
does not matter for safety, because the approval is not decided from the model's view: the call
is checked against the definition the server serves when the call is made, and its hash no longer
matches the one approved."""),
    ("markdown", """### Nobody to ask: `--policy never`

The changed tool once more, under `never`. The session's approval of `sweep` was dropped when the
definition changed, so nothing lets this call through: no panel, a decision recorded
`by="policy"`, and a message the model reads saying why it did not run."""),
    ("code", "%%agent --wait --policy never\nSweep the logs folder."),
    ("code", NEVER),
    ("markdown", """## Where this lives in Codex

In openai/codex at commit `608b8b1cc6ce` (each link names the commit and the lines):

- [`codex-rs/core/src/mcp_tool_call.rs` L1156-L1329](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/mcp_tool_call.rs#L1156-L1329) — `maybe_request_mcp_tool_approval` decides before each MCP
  call: the per-tool `approval_mode` from the config, the tool's annotations, and the answers
  ([L960-L967](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/mcp_tool_call.rs#L960-L967), `McpToolApprovalDecision`) *Allow*, *Allow for this session*, *Allow and don't ask
  me again*. Its remembered key ([L1343-L1370](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/mcp_tool_call.rs#L1343-L1370)) is the server, connector and tool **name**;
  nbagent binds a remembered approval to the definition hash as well — the rug pull above is what
  that adds.
- [`codex-rs/core/src/session/mcp.rs` L85-L198](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/session/mcp.rs#L85-L198) `request_mcp_server_elicitation` / [L204-L233](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/session/mcp.rs#L204-L233) `resolve_elicitation`:
  the pending entry of the active turn an approval question can travel as, until the front end
  answers.
- [`codex-rs/codex-mcp/src/tools.rs` L30-L56](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/tools.rs#L30-L56) (`ToolInfo`) — the listed tool definition (annotations included) the
  decision reads."""),
    ("markdown", """## Where this lives in nbagent

- `nbagent/core/approval.py` — `ask_reason` (the table), `ApprovalMemory` (bound to
  `definition_hash`), `fingerprint`/`changed_parts` (what changed), `ApprovalDesk` (asks, records).
- `nbagent/core/pending.py` — one mechanism for every ask: register, emit, wait, resolve once.
- `nbagent/core/tool_call.py` — every call passes the desk before it reaches a server;
  `definition_to_run` fetches the definition the call will run, which the approval is checked
  against (not the model's possibly older view).
- `nbagent/mcp/manager.py` — `current_definition` (waits for a re-list in flight), and a last
  check that the definition approved is the one called.
- `nbagent/config/edit.py` — `record_always_approval` writes *Always* into the file the server
  came from.
- `nbagent/schema/hash.py` — `definition_hash`.
- `nbagent/notebook/approval.py` — the panel you saw."""),
    ("markdown", """## Exercise

Write the policy table yourself. The check compares your function with `ask_reason` on every
policy, for annotations and trust settings none of this server's tools has."""),
    ("code", EXERCISE),
    ("code", CHECK),
]

WALKTHROUGH = Walkthrough(
    name="04-approval",
    title="Approval: policies, modes, annotations, remembered decisions and the rug pull",
    cells=CELLS,
    answer=(
        'answer = lambda policy, a, trusted: "runs" if policy == "full-auto" or (policy != "untrusted" and trusted '
        'and a is not None and a.get("readOnlyHint") is True and not a.get("destructiveHint")) '
        'else "declined" if policy == "never" else "asks"'
    ),
    wrong_answer='answer = lambda policy, a, trusted: "runs" if a and a.get("readOnlyHint") else "asks"',
    timeout=120,
    files=("04-approval.json",),
)
