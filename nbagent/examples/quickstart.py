"""The quickstart notebook, defined as code: ``notebooks/00-quickstart.ipynb`` is written from it.

Keeping the cells here makes the walkthrough ship inside the package (``nbagent demo`` runs it
from an installed wheel) while the repository keeps a readable ``.ipynb`` next to the others.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from nbagent.examples.cells import CellKind, build_notebook

SETUP = r'''import json, os, sys
from pathlib import Path
from importlib.resources import files

# A scratch folder for this walkthrough: its own config, notes and thread history.
work = Path("quickstart-work").resolve()
work.mkdir(exist_ok=True)
os.chdir(work)
os.environ["NBAGENT_HOME"] = str(work / "home")       # threads and logs stay in here

replay = files("nbagent.examples") / "quickstart.json"  # the scripted model's answers
(work / "nbagent.toml").write_text(f"""
model = "replay:{replay}"          # a scripted model: it replays fixed answers, offline
approval_policy = "on-request"     # ask unless a call is known to be safe

[mcp_servers.demo]                 # a real MCP server shipped with nbagent, over stdio
command = {json.dumps(sys.executable)}
args = ["-m", "nbagent.examples.demo_server", "--dir", "notes"]
trusted = true                     # let its read-only annotations skip the approval

[mcp_servers.demo.tools.log_experiment]
approval_mode = "approve"          # this tool asks its own question instead
""")
print((work / "nbagent.toml").read_text())

# nbagent reads a folder's nbagent.toml only once you trust the folder (it names programs to
# start): you just wrote this one. From a shell it is `nbagent trust`; in a notebook `%agent trust`.
from nbagent.config.edit import record_trust
trusted_in, folder = record_trust(work, "trusted")
print(f"trusted {folder} (written to {trusted_in})")'''

HEADLESS = r'''import nbagent.notebook as nb
from nbagent.examples.walkthroughs.kit import nobody_clicks
from nbagent.protocol import ApprovalDecision, ElicitationResponse

session = await nb.ready()          # the kernel's one Session (the one %%agent uses)
print("front end:", nb.frontend())

if nobody_clicks():                 # headless, or the executor that renders the docs
    # Nobody can click in CI or `nbagent demo`: answer through the Python API instead,
    # with exactly the ops the buttons send.
    def answer(event):              # an Event: seq, thread_id, turn_id, at around msg
        msg = event.msg
        if msg.type == "approval_requested":
            session.submit(ApprovalDecision(call_id=msg.call_id, decision="approve", by="code"))
        elif msg.type == "elicitation_requested":
            session.submit(ElicitationResponse(
                request_id=msg.request_id, action="accept", by="code",
                content={"title": "Baseline", "owner_email": "you@example.com", "runs": 3,
                         "optimizer": "adam", "tags": ["nlp"]},
            ))
    session.subscribe(answer)
    nb.answers_asks()               # tell the kernel: this code answers, so the cells ask it
    print("nobody clicks here: this cell answers the approvals and the question")'''

CELLS: list[tuple[CellKind, str]] = [
    ("markdown", """# nbagent quickstart

This notebook runs an agent **inside the kernel**, fully offline:

* the model is a **scripted model** (`replay:`): its replies are fixed in
  `nbagent/examples/quickstart.json` and only pick a branch by what happened to the previous call
  (approved or denied, answered or declined, failed). It is not AI; it lets every mechanism run
  for real without an API key, and its text always matches what you clicked;
* the tools come from a **real MCP server** (`nbagent.examples.demo_server`) started over stdio.

You will see a read-only call run by itself, a destructive call wait for **your approval**, and
a server **ask you a question** (an elicitation) in the middle of a call."""),
    ("markdown", """## 1. Configure

nbagent reads `nbagent.toml` in the working directory (the same shape as Codex's `config.toml`).
This cell writes one into a scratch folder: the scripted model and the demo server."""),
    ("code", SETUP),
    ("markdown", """## 2. Load the extension

`%load_ext nbagent` creates the kernel's session and starts the MCP servers **in the background**;
their status appears below."""),
    ("code", "%load_ext nbagent"),
    ("markdown", """## 3. When nobody is there to click

In a browser you answer approvals and questions with buttons. When this notebook runs headless
(`nbagent demo`, CI), no one can click — the next cell answers through the Python API with the
same ops the buttons send. In a browser it does nothing. (With no notebook UI and no code that
answers, `%%agent` declines each call that needs approval at once: nothing is left hanging.)"""),
    ("code", HEADLESS),
    ("markdown", """## 4. A first turn

The cell body is the goal. Without `--wait` the turn runs in the background and the cell returns
at once; the output keeps updating. `list_notes` is read-only on a trusted server: no approval."""),
    ("code", "%%agent\nWhat notes do I have?"),
    ("markdown", """## 5. A call that needs approval

`write_note` is marked destructive, so the agent stops and shows an approval panel: the server,
the raw tool name and the name the model sees, the annotations, and the **arguments as editable
JSON**. *Approve*, *Approve for session*, *Always* (saved to the config), *Deny* (with a reason
the model reads) or *Abort turn*. `--wait` keeps this cell running until the turn ends — clicks
still arrive. Where widgets do not render, `%agent approve CALL_ID` does the same."""),
    ("code", "%%agent --wait --policy on-request\nWrite a note called hello."),
    ("markdown", """## 6. A server asks a question

`log_experiment` asks for details through an MCP **elicitation**: a form built from the server's
schema (text with format checks, bounded numbers, a checkbox, a dropdown, a multi-select). Fill
it and press *Accept* (or *Decline* / *Cancel*)."""),
    ("code", "%%agent --wait --policy on-request\nLog an experiment called baseline."),
    ("code", "%%agent --wait\nRead the experiment note back."),
    ("markdown", """## 7. What happened

`%agent` shows the model, thread, policy and servers; `%agent history` lists the thread's items —
every call, its approval record, the question and its answer. Threads are saved, so
`%agent resume ID` continues one after a kernel restart."""),
    ("code", "%agent"),
    ("code", "%agent history"),
    ("code", "%agent mcp"),
]


def build() -> nbformat.NotebookNode:
    return build_notebook(CELLS, "quickstart")


def write(path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(build(), str(path))
    return path


if __name__ == "__main__":
    print(write(Path(__file__).resolve().parents[2] / "notebooks" / "00-quickstart.ipynb"))
