"""09-bring-your-own-model: OpenAI, an OpenAI-compatible local server, the scripted replay model,
and a thread recorded from an HTTP model turned into a replay script and played offline."""

from __future__ import annotations

from nbagent.examples.cells import CellKind
from nbagent.examples.walkthroughs import Walkthrough

CONFIGS = '''import tempfile
from pathlib import Path
from nbagent.config import ConfigError, load_config
from nbagent.models.factory import make_model

def client_for(toml: str, environ: dict[str, str]):
    """What nbagent builds from a config: nothing is sent until a turn asks the model."""
    folder = Path(tempfile.mkdtemp())
    (folder / "nbagent.toml").write_text(toml)
    (folder / "script.json").write_text('{"responses": []}')  # a replay: model's script is read as it is made
    # A folder this code just wrote, so trusted (a folder's config is read only then).
    config = load_config(folder, environ={"NBAGENT_TRUSTED_FOLDERS": str(folder), **environ})
    return make_model(config, config.require_model(), cwd=folder)

OPENAI = 'model = "gpt-4.1"\\n'
OLLAMA = """model = "qwen2.5:7b"
model_provider = "ollama"
[model_providers.ollama]
base_url = "http://127.0.0.1:11434/v1"
wire_api = "chat"
"""
try:
    client_for(OPENAI, {})
except ConfigError as exc:
    print("OpenAI, no key set:", exc)
placeholder = "sk-placeholder-not-a-real-key"
for name, toml in [("OpenAI, key set", OPENAI), ("Ollama", OLLAMA)]:
    client = client_for(toml, {"OPENAI_API_KEY": placeholder})
    print(f"{name}: {type(client).__name__} -> {client.endpoint!r}")
    assert placeholder not in repr(client.endpoint)
print("replay:", type(client_for('model = "replay:script.json"', {})).__name__)'''

SETUP = '''import os
from pathlib import Path
from nbagent.examples.walkthroughs.kit import workspace, autopilot, check, claim
from nbagent.examples.openai_compatible_server import ScriptedChatServer

# SCRIPTED replies, served over real HTTP in the Chat Completions wire format. Not a model.
REPLIES = [
    {"text": "Let me see which notes exist.", "tool_calls": [{"name": "mcp__demo__list_notes", "arguments": {}}]},
    {"text": "I will write the test report.", "tool_calls": [{"name": "mcp__demo__write_note", "arguments": {
        "name": "test-report", "text": "test_cancel_order fails: the order id arrives as a string."}}]},
    {"text": "Wrote the note `test-report` with the cause of the failure.", "usage": {"input_tokens": 420, "output_tokens": 14}},
]
NOT_WRITTEN = "The note was not written: the write was not approved, as the card above says."

def wrote_note():
    """Whether the demo server executed the write in this run (its own record says)."""
    record = Path("calls.jsonl")
    return record.is_file() and '"write_note"' in record.read_text()

class BranchingScript(ScriptedChatServer):
    """Still a script, not a model: its last reply says what happened to the write, as a replay
    script's branches pick a reply by the previous call's outcome."""
    def next_reply(self, body):
        reply = super().next_reply(body)
        if reply is REPLIES[-1] and not wrote_note():
            return {**reply, "text": NOT_WRITTEN}
        return reply

local = BranchingScript(REPLIES).start()         # 127.0.0.1, a fresh bearer token
os.environ["LOCAL_MODEL_KEY"] = local.token      # where env_key below tells nbagent to look

CONFIG = f"""
model = "scripted-local-model"
model_provider = "local"
approval_policy = "on-request"

[model_providers.local]           # what you would write for Ollama or vLLM, with their URL
base_url = "{local.base_url}"
wire_api = "chat"
env_key = "LOCAL_MODEL_KEY"

[mcp_servers.demo]
command = $python
args = ["-m", "nbagent.examples.demo_server", "--dir", "notes", "--record", "calls.jsonl"]
trusted = true
"""
work = workspace("09-bring-your-own-model", CONFIG)
(work / "calls.jsonl").unlink(missing_ok=True)    # the server's record starts empty on every run
(work / "notes" / "test-report.md").unlink(missing_ok=True)   # and there is no report yet'''

READY = '''import nbagent.notebook as nb
from nbagent.protocol import ApprovalDecision, ListMcpTools

session = await nb.ready()
await session.perform(ListMcpTools())
autopilot(session, lambda msg: ApprovalDecision(call_id=msg.call_id, decision="approve")
          if msg.type == "approval_requested" else None, on=AUTOPILOT)
http_model = session.model_client()
print(type(http_model).__name__, "|", http_model.label)   # nbagent cannot tell the server is scripted'''

MODEL_SAW = '''import json

first, second = local.requests[0], local.requests[1]
print("requests the HTTP server received:", len(local.requests))
print("roles in the first:", [m["role"] for m in first["messages"]])
print("tools it offered:", [t["function"]["name"] for t in first["tools"]])
print("the list_notes result, as the second request carried it back:",
      [m["content"] for m in second["messages"] if m["role"] == "tool"])
print()
print("the MCP server's own names:", [(s.server, s.raw_name) for s in session.snapshot().tools if s.server])
for line in (work / "calls.jsonl").read_text().splitlines():
    print("demo server executed:", json.loads(line)["tool"], json.loads(line)["arguments"])'''

ROLLOUT = '''recorded_thread = session.snapshot().thread_id
rollout = (work / "home" / "threads" / f"{recorded_thread}.jsonl").read_text()
for line in rollout.splitlines():
    record = json.loads(line)
    item = record.get("item", {})
    detail = record.get("status") or item.get("name") or item.get("decision") or item.get("output") or item.get("text") or ""
    print(f"{record['type']:11} {item.get('type', ''):21} {str(detail)[:60]!r}")
print("\\nthe bearer token is in the rollout:", local.token in rollout)'''

EXPORT = '''import sys
!{sys.executable} -m nbagent.cli export replay {recorded_thread} -o report.json --force
print((work / "report.json").read_text())'''

STOP = '''local.stop()                     # the HTTP model is gone; the replay needs no network
served = len(local.requests)
print("the HTTP server answered", served, "requests and is stopped")'''

COMPARE = '''from nbagent.store import ThreadStore

def calls_and_texts(items):
    return [(i.name, json.loads(i.arguments)) if i.type == "function_call" else i.text
            for i in items if i.type in ("function_call", "assistant_message")]

with ThreadStore(work / "home") as store:
    recorded = store.load(recorded_thread)
replayed = session.snapshot().items
print("replayed thread:", session.snapshot().thread_id, "(recorded:", recorded_thread + ")")
for was, now in zip(calls_and_texts(recorded.items), calls_and_texts(replayed)):
    print("same" if was == now else "DIFFERENT", "|", now)
print("\\nidentical calls and texts:", calls_and_texts(recorded.items) == calls_and_texts(replayed))
print("requests to the HTTP server during the replay:", len(local.requests) - served)
print("demo server executions:", [json.loads(line)["tool"] for line in (work / "calls.jsonl").read_text().splitlines()])'''

EXERCISE = '''# The script's third response is a branch: the recorded reply is filed under the outcome that happened.
# Under which outcome key would it be filed if, while recording, you had denied the write?
answer = ...'''

CHECK = '''from nbagent.models.replay_export import script_from_thread

denied = [item.model_copy(update={"decision": "deny"}) if item.type == "approval" else item
          for item in recorded.items]
branch = script_from_thread(denied, recorded.turns)["responses"][2]["branch"]
def filed_under(key):
    if not isinstance(key, str):
        raise AssertionError(f"Not yet: `answer` is a {type(key).__name__}; an outcome key is a string, "
                             "like the keys of the branch report.json holds")
    return key == next(key for key, reply in branch.items() if reply != branch["default"])

check(answer, filed_under,
      hint="the approval record's decision decides the key; look at the outcomes table in docs/replay.md",
      why="the export asks the replay parser's own previous_outcomes what the call's approval was, so a replay "
          "in which you deny plays the reply filed under that key, and the default otherwise.")'''

CELLS: list[tuple[CellKind, str]] = [
    ("markdown", """# 09 · Bring your own model

## The problem the boundary solves

Everything the other walkthroughs showed, naming, approval, elicitation, history, belongs to the
runtime, not to the model. A model request is a projection of runtime state (history, tools,
instructions); the model's answer comes back as a stream of structured events (text deltas, tool
calls, usage) that the runtime records and acts on. So exactly one boundary may know which model
answers: the model client, picked from configuration. Behind it nbagent has three kinds:

- **OpenAI** itself (the Responses API);
- **any OpenAI-compatible server** (the Chat Completions API): Ollama, vLLM, llama.cpp, LM Studio
  on your own machine;
- **the scripted replay model** `replay:FILE`, which plays a JSON script offline and is labelled
  "scripted" wherever a model is named.

The fourth piece closes the loop for teaching: a thread recorded once with a real model becomes a
replay script (`nbagent export replay`), so a class replays it without keys, GPUs or network."""),
    ("markdown", """### OpenAI (configured here, not run)

This machine has no connection to OpenAI, so this notebook does not call it. On yours, set the key
in the environment Jupyter starts from (`export OPENAI_API_KEY=sk-...`) and name a model:

```toml
model = "gpt-4.1"          # model_provider = "openai" is the default: api.openai.com, Responses API
```

### An OpenAI-compatible server on your machine (Ollama, vLLM)

```toml
model = "qwen2.5:7b"                       # a model that supports tool calling
model_provider = "ollama"
[model_providers.ollama]
base_url = "http://127.0.0.1:11434/v1"     # `ollama serve`; no key needed
wire_api = "chat"
model_context_window = 32768               # tell nbagent the window you run it with
```

For vLLM: `vllm serve MODEL --api-key ... --enable-auto-tool-choice --tool-call-parser PARSER`,
then `base_url = "http://127.0.0.1:8000/v1"`, `wire_api = "chat"`, and `env_key = "VLLM_API_KEY"`
naming the environment variable that holds its key (nbagent reads the key from there and never
writes it to the rollout). vLLM reports its window (`max_model_len`) and nbagent asks for it.

The cell below builds, from each config, the client a turn would use, without sending anything:"""),
    ("code", CONFIGS),
    ("markdown", """## A live demonstration

A real local server is not available here either, so the notebook starts one that is honestly
**scripted**: `nbagent/examples/openai_compatible_server.py` answers `POST /v1/chat/completions`
with the next reply of a list, streamed as Chat Completions chunks the way Ollama and vLLM stream
them, on 127.0.0.1 behind a bearer token. nbagent cannot tell it from a model: the real `openai`
client talks to it over a real socket. The tools come from the real demo MCP server."""),
    ("code", SETUP),
    ("code", "%load_ext nbagent"),
    ("code", READY),
    ("markdown", "Our running example, fixing a failing test: the model lists the notes, then writes a test report, which asks for approval (the autopilot approves unless `AUTOPILOT = False`)."),
    ("code", "%%agent --wait\nThe order tests fail and there is no test report yet. Write one as a note."),
    ("code", '''claim(wrote_note(), "the write was approved and the note written",
      otherwise="the write was declined, so no note exists; this walkthrough records an approved write")'''),
    ("markdown", """## "What the model saw" vs what the server sent

The HTTP server kept every request body: the history as Chat Completions messages, the tools
under their model-visible names, and the MCP result put back as a `tool` message. The MCP server
knows its tools by their raw names and recorded what it executed."""),
    ("code", MODEL_SAW),
    ("markdown", "What the runtime kept: the rollout holds the facts in order, the approval among them, and no credential (the bearer token went to the HTTP server only)."),
    ("code", ROLLOUT),
    ("markdown", """## Record once, replay offline

`nbagent export replay THREAD -o FILE` writes the thread as a replay script: each model request's
text and tool calls, in order. The reply after the approved write becomes a `branch`: the recorded
reply filed under `approved`, and a `default` for a replay in which the person decides otherwise,
also played under `error` first (a write approved in the replay that then fails must not hear the
recorded success). The reply after `list_notes`, which simply ran, stays plain (docs/replay.md,
"Recording a script from a real model")."""),
    ("code", EXPORT),
    ("code", STOP),
    ("markdown", "The same prompt in a new thread, now with the scripted model playing the script. The MCP server is the real one, so the write asks again and runs again."),
    ("code", "%%agent --wait --new -m replay:report.json\nThe order tests fail and there is no test report yet. Write one as a note."),
    ("code", COMPARE),
    ("markdown", """## Where this lives in Codex

In openai/codex at commit `608b8b1cc6ce` (each link names the commit and the lines):

The lesson's files show the same separation from the MCP side:

- [`codex-rs/mcp-server/src/message_processor.rs` L346-L400](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/mcp-server/src/message_processor.rs#L346-L400) — a `tools/call` of the `codex` tool turns its arguments into a `Config`
  (the model among the overrides) before any conversation starts: which model answers is a
  setting the runtime is handed.
- [`codex-rs/mcp-server/src/codex_tool_runner.rs` L53-L141](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/mcp-server/src/codex_tool_runner.rs#L53-L141) — runs that conversation, and its event loop ([L194-L411](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/mcp-server/src/codex_tool_runner.rs#L194-L411)) forwards the
  events to the MCP client, whatever model the config named.
- [`codex-rs/core/src/mcp_tool_call.rs` L106-L292](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/mcp_tool_call.rs#L106-L292) — an MCP call's result becomes the function-call output the next model
  request carries: result backfill does not depend on the provider."""),
    ("markdown", """## Where this lives in nbagent

- `nbagent/models/factory.py` — `make_model`: `replay:` or the provider's `wire_api` client;
  `endpoint_for`: base URL and key, with the error that says what to set.
- `nbagent/models/endpoint.py` — `Endpoint` (the key stays out of `repr`) and the shared SDK client.
- `nbagent/models/responses.py`, `nbagent/models/chat.py` — the two wire APIs, as model events.
- `nbagent/models/replay.py` — the scripted model, its branches and `previous_outcomes`.
- `nbagent/models/replay_export.py` — a thread as a replay script; `nbagent/cli.py` wires
  `nbagent export replay`.
- `nbagent/examples/openai_compatible_server.py` — the scripted HTTP server of this notebook."""),
    ("markdown", "## Exercise"),
    ("code", EXERCISE),
    ("code", CHECK),
]

WALKTHROUGH = Walkthrough(
    name="09-bring-your-own-model",
    title="Bring your own model: OpenAI, a local server, the replay model, record and replay",
    cells=CELLS,
    answer='answer = "denied"',
    wrong_answer='answer = "approved"',
    timeout=120,
)
