"""11-sandbox: the boundary the operating system draws around every stdio MCP server and every
``shell`` command — a probe server run inside and outside it, the ``shell`` tool asking only when
it wants out, what the model is told, and the sandbox a server receives in ``_meta``."""

from __future__ import annotations

from nbagent.examples.cells import CellKind
from nbagent.examples.walkthroughs import Walkthrough

WHO_ANSWERS = """> **Who answers the panels.** The walkthrough's own autopilot (`kit.autopilot`, on while
> `AUTOPILOT = True`) answers each approval, and it **denies** the one this notebook asks. Set
> `AUTOPILOT = False` and run it in JupyterLab or Notebook 7 to answer it yourself: deny it to see
> the same run, approve it to see the command run outside the sandbox."""

SETUP = '''import os, socket, tempfile, threading
from pathlib import Path
from jupyter_core.paths import jupyter_runtime_dir
from nbagent.examples.walkthroughs.kit import workspace, check, data

CONFIG = f"""
model = "replay:{data('11-sandbox.json')}"
approval_policy = "on-request"
sandbox_mode = "workspace-write"    # Codex's default mode: writes in the workspace, no network
# Each probe speaks the `initialize` handshake (protocol = "legacy"): the MCP SDK's server answers
# the newer `server/discover` without the experimental capability the probe declares.

[mcp_servers.boxed]                 # the top-level sandbox
command = $python
args = ["-m", "nbagent.examples.probe_server"]
protocol = "legacy"

[mcp_servers.locked]
command = $python
args = ["-m", "nbagent.examples.probe_server"]
protocol = "legacy"
sandbox_mode = "read-only"          # per server, Codex's key

[mcp_servers.open]
command = $python
args = ["-m", "nbagent.examples.probe_server"]
protocol = "legacy"
sandbox_mode = "danger-full-access" # no sandbox for this one
"""
work = workspace("11-sandbox", CONFIG)

# A fake home with a planted secret: the sandbox hides ~/.ssh, ~/.aws, ... of whatever $HOME is.
# Jupyter's runtime folder (kernel connection files, hidden too) is pinned first, so moving
# $HOME does not move it.
os.environ.setdefault("JUPYTER_RUNTIME_DIR", jupyter_runtime_dir())
home = work / "fake-home"
(home / ".ssh").mkdir(parents=True, exist_ok=True)
SECRET = home / ".ssh" / "id_ed25519"
SECRET.write_text("-----BEGIN OPENSSH PRIVATE KEY----- planted by the walkthrough")
os.environ["HOME"] = str(home)

(work / ".git").mkdir(exist_ok=True)              # a repository's metadata: kept read-only
OUTSIDE = Path(tempfile.mkdtemp(prefix="nbagent-11-outside-"))   # a folder outside the workspace
for leftover in (work / "note.txt", work.parent / "11-sandbox-note-copy.txt"):
    leftover.unlink(missing_ok=True)

# A loopback listener in this kernel: it greets whoever connects.
listener = socket.create_server(("127.0.0.1", 0))
PORT = listener.getsockname()[1]
def greet():
    while True:
        conn, _ = listener.accept()
        with conn:
            conn.sendall(b"hello from the kernel")
threading.Thread(target=greet, daemon=True).start()
print(f"\\nsecret planted at {SECRET}; loopback listener on port {PORT}")'''

READY = '''import json
import nbagent.notebook as nb
from nbagent.examples.walkthroughs.kit import autopilot
from nbagent.protocol import ApprovalDecision, CallTool, ListMcpTools

session = await nb.ready()
await session.perform(ListMcpTools())

asked = []                       # every approval asked, whoever answers it
session.subscribe(lambda event: event.msg.type == "approval_requested" and asked.append(event.msg))
autopilot(session, lambda msg: ApprovalDecision(call_id=msg.call_id, decision="deny")
          if msg.type == "approval_requested" else None, on=AUTOPILOT)

names = {(spec.server, spec.raw_name): spec.name for spec in session.snapshot().tools if spec.server}

async def probe(server, tool, **arguments):
    """Call one probe tool as an outside caller would (full-auto: approvals are not this lesson)."""
    ended = await session.perform(CallTool(name=names[server, tool], arguments=arguments, policy="full-auto"))
    return ended.output'''

MATRIX = '''PROBES = {
    "read the planted secret":     ("read_file",   {"path": str(SECRET)}),
    "write in the workspace":      ("write_file",  {"path": str(work / "probe.txt")}),
    "write outside the workspace": ("write_file",  {"path": str(OUTSIDE / "probe.txt")}),
    "write into .git":             ("write_file",  {"path": str(work / ".git" / "probe")}),
    "connect to 127.0.0.1":        ("connect_tcp", {"port": PORT}),
    "send UDP to 127.0.0.1":       ("send_udp",    {"port": PORT}),
    "signal this kernel":          ("signal_process", {"pid": os.getpid()}),
}
SERVERS = {"boxed": "workspace-write", "locked": "read-only", "open": "danger-full-access"}

matrix = {}
print(f"{'':30}" + "".join(f"{s + ' (' + m + ')':>36}" for s, m in SERVERS.items()))
for label, (tool, arguments) in PROBES.items():
    row = {server: await probe(server, tool, **arguments) for server in SERVERS}
    matrix[label] = {server: text.split(":")[0] for server, text in row.items()}
    print(f"{label:30}" + "".join(f"{matrix[label][s]:>36}" for s in SERVERS))

print("\\nwhat the sandboxed server was told, word for word:")
print("  ", await probe("boxed", "read_file", path=str(SECRET)))
print("  ", await probe("boxed", "connect_tcp", port=PORT))
print("  ", await probe("boxed", "signal_process", pid=os.getpid()))'''

MATRIX_CHECK = '''expected = {
    "read the planted secret":     {"boxed": "blocked", "locked": "blocked", "open": "allowed"},
    "write in the workspace":      {"boxed": "allowed", "locked": "blocked", "open": "allowed"},
    "write outside the workspace": {"boxed": "blocked", "locked": "blocked", "open": "allowed"},
    "write into .git":             {"boxed": "blocked", "locked": "blocked", "open": "allowed"},
    "connect to 127.0.0.1":        {"boxed": "blocked", "locked": "blocked", "open": "allowed"},
    "send UDP to 127.0.0.1":       {"boxed": "blocked", "locked": "blocked", "open": "allowed"},
    "signal this kernel":          {"boxed": "blocked", "locked": "blocked", "open": "blocked"},
}
assert matrix == expected, f"the sandbox did not hold as this notebook says: {matrix}"
print("Every probe came out as the table above says: blocked in both sandboxes, allowed outside,")
print("but the signal, which even the server with no sandbox cannot send to this kernel.")'''

META = '''states = {server: json.loads(await probe(server, "sandbox_state")) for server in SERVERS}
for server, state in states.items():
    print(f"{server}: {json.dumps(state, indent=1)}\\n")
assert {server: state["sandboxPolicy"]["type"] for server, state in states.items()} == SERVERS'''

SHELL_CHECK = '''ran = [item for item in session.snapshot().items if item.type == "function_call" and item.name == "shell"]
inside, outside = ran[0], ran[1]
print("the command inside the sandbox:", inside.arguments)
print("  approval asked:", any(a.call_id == inside.call_id for a in asked),
      "| note.txt written:", (work / "note.txt").exists())
print("the command asking to go outside:", outside.arguments)
print("  approval asked:", any(a.call_id == outside.call_id for a in asked))
copied = (work.parent / "11-sandbox-note-copy.txt").exists()
print("  the copy outside the workspace exists:", copied, "(it does only if the approval was given)")

assert (work / "note.txt").read_text() == "sandbox notes\\n"
assert [a.call_id for a in asked] == [outside.call_id], "on-request asks for the escalated command only"'''

TOLD = '''from IPython.utils.capture import capture_output

def told():
    """The last model request, as `%agent inspect request --json` shows it."""
    with capture_output() as shown:
        get_ipython().run_line_magic("agent", "inspect request --json")
    request = json.loads(shown.stdout)
    permissions = next(p for p in request["instructions"].split("\\n\\n") if p.startswith("Permissions:"))
    shell = next(t for t in request["tools"] if t["name"] == "shell")
    return permissions, shell["description"]

permissions, shell_description = told()
print("in the instructions:\\n ", permissions)
print("\\nin the shell tool's description:\\n ", shell_description)'''

TURN_SANDBOX_CHECK = '''permissions_now, shell_now = told()
print("the shell tool's description for that turn:\\n ", shell_now)
assert "runs in the sandbox (read-only)" in shell_now
assert permissions_now == permissions, "the MCP servers keep the sandbox they started in"
print("\\nand the next turn is back in the session's:", "(workspace-write)" in shell_description)'''

EXERCISE = '''# Decide, as the sandbox does, whether a workspace-write process may write `path`
# (relative to `workspace`, or absolute). `workspace` is an absolute folder; `writable_roots` are the
# extra roots of [sandbox_workspace_write], relative to the workspace or absolute. Return True or False.
def may_write(path, workspace, writable_roots):
    ...

answer = ...'''

CHECK = r'''import shutil, tempfile
from nbagent.sandbox.policy import SandboxWorkspaceWrite, resolve

def refuse(why):
    raise AssertionError(f"Not yet: {why}")

# A fresh tree: a workspace with a repository and a symlink out of it, an extra root beside it,
# and a sibling folder whose name starts like the workspace's.
tree = Path(tempfile.mkdtemp(prefix="nbagent-11-exercise-"))
ws = tree / "ws"
for folder in (ws / ".git", ws / "src", tree / "cache", tree / "ws-old", tree / "elsewhere"):
    folder.mkdir(parents=True, exist_ok=True)
(ws / "out").symlink_to(tree / "elsewhere")

def policy_says(path, roots):
    # nbagent's own answer: the policy it would start a process under, and the folders it enforces.
    plan = resolve("workspace-write", SandboxWorkspaceWrite(writable_roots=roots),
                   workspace=ws, home=tree / "home").plan()
    target = os.path.realpath(os.path.join(ws, path))
    inside = lambda folder: target == folder or target.startswith(folder.rstrip("/") + "/")
    return any(map(inside, plan["write"])) and not any(map(inside, plan["readonly"] + plan["deny"]))

cases = [  # (path, writable_roots, what to say when the answer differs from nbagent's)
    ("src/app.py", [], "a file in the workspace: the workspace is the first writable root"),
    (str(ws / "src" / "app.py"), [], "an absolute path is the same file as its relative form"),
    (".git/config", [], "a repository's metadata stays read-only inside every writable root"),
    (".gitignore", [], "a name that only starts like .git is an ordinary file: compare whole path parts"),
    ("src/../../elsewhere/x", [], "resolve `..` first: a path can climb out of the workspace"),
    (str(tree / "ws-old" / "x"), [], "a folder whose name starts like the workspace's is not inside it"),
    ("out/x", [], "the kernel follows symlinks: resolve them (os.path.realpath) before comparing"),
    ("../cache/pkg.whl", ["../cache"], "writable_roots are writable too, relative to the workspace"),
    ("../cache/pkg.whl", [], "without writable_roots only the workspace is writable"),
    ("/etc/hosts", ["../cache"], "a system file is in no writable root"),
]

def agrees_with_nbagent(fn):
    if not callable(fn):
        refuse(f"`answer` is a {type(fn).__name__}; it should be the function itself (`answer = may_write`, no call)")
    for path, roots, nudge in cases:
        try:
            got = fn(path, str(ws), list(roots))
        except Exception as exc:
            refuse(f"may_write({path!r}, ...) raised {type(exc).__name__}: {exc} (all three arguments are "
                   "strings or a list of strings; os.path.join and os.path.realpath take them)")
        if not isinstance(got, bool):
            refuse(f"may_write({path!r}, ...) returned {type(got).__name__}; return True or False")
        if got != policy_says(path, roots):
            refuse(f"may_write({path!r}, workspace, {roots}) differs from nbagent's policy: {nudge}")
    return True

try:
    check(answer, agrees_with_nbagent,
          hint="see the message above",
          why="that is the policy nbagent resolves (nbagent/sandbox/policy.py) and Landlock enforces: "
              "paths are resolved before they are compared, so neither `..` nor a symlink leads out, and "
              "the repository's .git stays read-only so a boxed process cannot plant a hook.")
finally:
    shutil.rmtree(tree, ignore_errors=True)'''

ANSWER = '''def may_write(path, workspace, writable_roots):
    real = lambda p: os.path.realpath(os.path.join(workspace, p))
    target, roots = real(path), [real("."), *map(real, writable_roots)]
    inside = lambda folder: os.path.commonpath([target, folder]) == folder
    return any(map(inside, roots)) and not any(inside(os.path.join(r, ".git")) for r in roots)
answer = may_write'''
WRONG_ANSWER = "answer = lambda path, workspace, writable_roots: not path.startswith(('/', '..', '.git'))"

CELLS: list[tuple[CellKind, str]] = [
    ("markdown", """# 11 · The sandbox: a boundary the operating system enforces

## The problem the boundary solves

Approvals decide *whether* a call runs. Once it runs, an MCP server nbagent starts (or a
command the model asked for) runs as you: it can read `~/.ssh`, the kernel's connection file
(code execution in this kernel), nbagent's own `/proc/PID/environ` (the API key), write
anywhere, and reach any host. So a person either approves every call by hand or runs unsafely.

A sandbox answers *what may it do while it runs*. nbagent starts every stdio MCP server, and every
`shell` command, under the mode you choose, enforced by Linux itself (user, mount, PID and
network namespaces plus Landlock), and refuses to start anything it cannot confine (never a
silent downgrade). Codex does the same for its own commands; nbagent extends it to MCP servers.

| nbagent | Codex | meaning |
|---|---|---|
| `sandbox_mode = "read-only"` | `SandboxPolicy::ReadOnly` | read (secrets hidden), write only a private `$TMPDIR` |
| `sandbox_mode = "workspace-write"` | `SandboxPolicy::WorkspaceWrite` | write the workspace and `writable_roots`, `.git` read-only, no network unless `network_access` |
| `sandbox_mode = "danger-full-access"` | `SandboxPolicy::DangerFullAccess` | no sandbox |
| `approval_policy = "untrusted"` | `AskForApproval::UnlessTrusted` | asks unless approved for the session |
| `approval_policy = "on-request"` | `AskForApproval::OnRequest` | a command inside the sandbox runs; one that wants out asks |
| `approval_policy = "never"` | `AskForApproval::Never` | never asks: what would ask is declined, the model is told |
| `approval_policy = "full-auto"` | no one variant (Codex's `--full-auto` flag is `on-request` plus `workspace-write`) | never asks and runs every call, a `shell` command that asks to leave the sandbox included |

The two axes are independent: the sandbox bounds what a running call can do, the approval
policy decides when a person is asked."""),
    ("markdown", WHO_ANSWERS),
    ("markdown", "## A live demonstration\n\nThree copies of one real MCP server, `nbagent/examples/probe_server.py`, each under another mode. Each of its tools tries one thing and answers `allowed: ...` or `blocked: ...` with the error the operating system gave it."),
    ("code", SETUP),
    ("code", "%load_ext nbagent"),
    ("code", READY),
    ("markdown", "`%agent` shows each server's sandbox (the words `nbagent mcp list` and `nbagent inspect tools` use) and the `shell` tool's:"),
    ("code", "%agent"),
    ("markdown", """## The probe matrix

The same probes, called on each server (the signal is `SIGCONT`, which does nothing to a running
process). Nothing here asks the model: the calls go through
the session as an outside caller's would (`CallTool`), so the table is what the servers did."""),
    ("code", MATRIX),
    ("markdown", "The notebook fails here if any cell of that table is not what this page says:"),
    ("code", MATRIX_CHECK),
    ("markdown", """Under `workspace-write` the secret's folder is an empty read-only mount, `.git` is bound
read-only, Landlock refuses writes outside the workspace, and the server has a network namespace
of its own with nothing in it, loopback included. Its own PID namespace (and Landlock's signal
scope) leaves it no process of this kernel to signal, nor a `/proc/PID/environ` to read. `read-only`
writes nothing but its `$TMPDIR`.

The signal is refused to `open` too: that is not the sandbox but the launcher every stdio server
starts under, in every mode, which keeps a server's signals inside its own process tree
(docs/security.md, "Processes servers start").

## The sandbox a server is told: `codex/sandbox-state-meta`

A server that declares Codex's experimental capability `codex/sandbox-state-meta` in
`initialize` gets the sandbox it runs in with each `tools/call`, under that key of `_meta`, in
Codex's shape (`SandboxState`: `sandboxPolicy`, `sandboxCwd`, ...). The probe server declares
it, and its `sandbox_state` tool returns what it received:"""),
    ("code", META),
    ("markdown", """## The `shell` tool: inside without asking, outside only with you

The scripted model now runs two commands through nbagent's `shell` tool (Codex's arguments:
`command` as an argv list, `workdir`, `timeout_ms`). Under `on-request` the first, inside the
sandbox, runs without a panel; the second asks to run outside it
(`with_escalated_permissions`, with a `justification`), so it asks."""),
    ("code", "%%agent --wait --policy on-request\nWrite a note in the workspace, then copy it next to the workspace."),
    ("code", SHELL_CHECK),
    ("markdown", """## What the model is told

The model cannot see the sandbox; it is told. `%agent inspect request` shows the last request
exactly as sent: a `Permissions:` paragraph in the instructions (the servers' mode, the writable
roots, the network, and that `run_python` runs outside any sandbox), and the `shell` tool's
description."""),
    ("code", TOLD),
    ("markdown", """### One turn in another sandbox

`%%agent --sandbox MODE` runs that turn's `shell` commands in `MODE`, and the tool's description
for that turn says so. The MCP servers keep the sandbox they started in (change `sandbox_mode`
and `%agent mcp restart NAME` for them)."""),
    ("code", "%%agent --wait --policy on-request --sandbox read-only\nWhich sandbox do your commands run in now?"),
    ("code", TURN_SANDBOX_CHECK),
    ("markdown", """## Where this lives in Codex

In openai/codex at commit `608b8b1cc6ce` (each link names the commit and the lines):

- [`codex-rs/codex-mcp/src/runtime.rs` L20-L30](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/runtime.rs#L20-L30) — `SandboxState`, the payload a server that declared the capability
  receives (`permissionProfile`, `sandboxPolicy`, `codexLinuxSandboxExe`, `sandboxCwd`,
  `useLegacyLandlock`), camelCase as above; nbagent sends the same keys but `permissionProfile`,
  which is optional. [L32-L90](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/codex-mcp/src/runtime.rs#L32-L90), `McpRuntimeContext`: where each server runs — Codex itself
  starts MCP servers unsandboxed, nbagent starts each stdio server inside the sandbox.
- [`codex-rs/core/src/mcp_tool_call.rs` L701-L747](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/core/src/mcp_tool_call.rs#L701-L747) — `augment_mcp_tool_request_meta_with_sandbox_state` puts it in the
  `tools/call` `_meta` only for a server that declared `codex/sandbox-state-meta`.
- [`codex-rs/protocol/src/protocol.rs` L771-L820](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/protocol/src/protocol.rs#L771-L820) (`AskForApproval`) and [L879-L931](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/protocol/src/protocol.rs#L879-L931) (`SandboxPolicy::WorkspaceWrite`) —
  the two axes in the table at the top.

How Codex confines a command on Linux (Landlock, and bubblewrap's namespaces) is its
`linux-sandbox` crate."""),
    ("markdown", """## Where this lives in nbagent

- `nbagent/sandbox/policy.py` — the modes, `resolve` (a mode made concrete: write roots, hidden
  paths, network), `SandboxPolicy.codex_policy` (Codex's serialisation).
- `nbagent/sandbox/enforce.py` — namespaces, masks and Landlock, run in the processes the
  launcher forks; `nbagent/mcp/launcher.py` — the launcher every server and command starts under.
- `nbagent/mcp/sandboxed.py` — one server's policy (its own keys over the top-level ones), the
  `codex/sandbox-state-meta` payload and the `Permissions:` paragraph.
- `nbagent/tools/shell.py` — the `shell` tool, its sandbox per turn, and a denial offered to
  the person; `nbagent/core/approval.py` — Codex's rule for sandboxed tools.
- `nbagent/notebook/options.py` — `%%agent --sandbox`."""),
    ("markdown", """## Exercise

Write the sandbox's rule for writes as a function. The check builds a fresh tree (a workspace
with a `.git`, a symlink out of it, an extra root beside it) and compares your answer on paths this
notebook never tried with what nbagent's own policy (`resolve(...).plan()`, the folders the
launcher enforces) says."""),
    ("code", EXERCISE),
    ("code", CHECK),
]

WALKTHROUGH = Walkthrough(
    name="11-sandbox",
    title="The sandbox: a boundary the operating system enforces",
    cells=CELLS,
    answer=ANSWER,
    wrong_answer=WRONG_ANSWER,
    timeout=120,
    files=("11-sandbox.json",),
)
