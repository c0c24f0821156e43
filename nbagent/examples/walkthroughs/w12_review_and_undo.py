"""12-review-and-undo: 08's running example again, with the built-in ``apply_patch``: the patch
reviewed as a diff before it runs, applied, the test run green, the turn's checkpoint (a ghost
commit) in the rollout, ``%agent undo``, the files and the red test back, and what the model's
next request says about the undo."""

from __future__ import annotations

from nbagent.examples.cells import CellKind
from nbagent.examples.walkthroughs import Walkthrough

SETUP = r'''import hashlib, json, os, subprocess, sys
from nbagent.examples.walkthroughs.kit import autopilot, calc_project, check, claim, data, workspace

CONFIG = f"""
model = "replay:{data('12-review-and-undo.json')}"   # a scripted model, offline
approval_policy = "on-request"                        # apply_patch changes files: it asks
"""
work = workspace("12-review-and-undo", CONFIG)

project = work / "project"
ORIGINAL = calc_project(project)             # 08's project: a package with a bug, and the test that catches it

def pytest_exit():
    """Run the project's tests in a process of their own, as a person would; return the exit code."""
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "--color=no", "-p", "no:cacheprovider"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=120)
    print("pytest exits with", done.returncode, "-", done.stdout.strip().splitlines()[-1])
    return done.returncode

claim(pytest_exit() == 1, "the test fails before the turn", otherwise="pytest did not fail")'''

TAPS = r'''import nbagent.notebook as nb
from nbagent.protocol import ApprovalDecision

session = await nb.ready()

def answer(msg):
    """What a person would click, when the autopilot is on: approve the patch as proposed."""
    if msg.type == "approval_requested":
        return ApprovalDecision(call_id=msg.call_id, decision="approve")
    return None

print("autopilot:", autopilot(session, answer, on=AUTOPILOT))
events = []                                  # every event, as the widgets get them
session.subscribe(events.append)
of_type = lambda kind: [e.msg for e in events if e.msg.type == kind]'''

REVIEW = r'''from IPython.display import HTML, display
from nbagent.kit.diffview import changes_text
from nbagent.notebook.diffview import changes_html

claim(bool(of_type("approval_requested")), "the patch waited for a decision, its diff shown",
      otherwise="no approval was asked: with nobody to answer, the call was declined at once (the turn above)")
asked = of_type("approval_requested")[0]
for change in asked.changes:
    print(f"{change.kind} {change.path}: sha256 before {change.old_hash[:12]}, after {change.new_hash[:12]}")
print("\nthe diff, as the terminal and an MCP caller get it:")
print(changes_text(asked.changes))
print("and as the approval panel draws it:")
display(HTML(changes_html(asked.changes)))

before = hashlib.sha256(ORIGINAL["calc/core.py"].encode()).hexdigest()
claim(asked.changes[0].old_hash == before, "the diff was made against the file as it was when approval was asked",
      otherwise="the change's old_hash is not the hash of the file on disk")'''

APPLIED = r'''from nbagent.patch import line_counts

resolved = of_type("approval_resolved")[0]
print(f"approval: {resolved.decision} by {resolved.by}")
end = of_type("patch_apply_end")[0]
print(f"patch_apply_end: success={end.success}, stdout={end.stdout!r}")
for change in end.changes:
    added, removed = line_counts(change.unified_diff)   # the same count the card's header shows
    print(f"  {change.kind} {change.path}: +{added} -{removed}")
print()
claim(end.success and pytest_exit() == 0, "the patch is on disk and the test is green",
      otherwise="the patch was not applied (see the approval above) or the test still fails")'''

GHOST = r'''from nbagent.store import read_rollout

rollout = work / "home" / "threads" / f"{session.snapshot().thread_id}.jsonl"
lines, _ = read_rollout(rollout)
records = [getattr(line, "item", line) for line in lines]     # a turn record, or the item a line holds
print("the rollout's lines:", ", ".join(r.type for r in records))

ghost = next(r for r in records if r.type == "ghost_snapshot")
print(f"\nghost_snapshot: commit {ghost.commit[:12]} under {ghost.ref}")
print(f"  in the repository {ghost.git_dir}, work tree {ghost.work_tree}")
for change in ghost.changes:
    print(f"  {change.path}: blob {change.before[:12]} before the turn -> {change.after[:12]} after it")

git = ["git", f"--git-dir={ghost.git_dir}"]
kept = subprocess.run([*git, "cat-file", "-p", ghost.changes[0].before], capture_output=True, text=True).stdout
refs = subprocess.run([*git, "for-each-ref", "--format=%(refname)", "refs/nbagent/"], capture_output=True, text=True)
print("\nnbagent's refs in that repository (no branch, index or HEAD touched):", refs.stdout.split())
claim(kept == ORIGINAL["calc/core.py"], "the snapshot keeps calc/core.py as it was before the turn",
      otherwise="the blob the snapshot names is not the original file")'''

UNDO = r'''import asyncio
from nbagent.notebook.extension import get_agent
running = set(get_agent().tasks)
%agent undo
_ = await asyncio.gather(*(get_agent().tasks - running))   # %agent works in the background: wait for it'''

BACK = r'''now = {name: (project / name).read_text() for name in ORIGINAL}
print("calc/core.py is now:\n" + now["calc/core.py"])
undo = next(i for i in session.snapshot().items if i.type == "undo")
print("the rollout's undo item:", undo.model_dump(include={"undone_turn_id", "restored", "overwritten"}))
claim(now == ORIGINAL and pytest_exit() == 1, "every file is as it was before the turn, and the test is red again",
      otherwise="a file differs from the original or the test passes")'''

TOLD = r'''from IPython.utils.capture import capture_output

with capture_output() as shown:
    get_ipython().run_line_magic("agent", "inspect request --json")
request = json.loads(shown.stdout)
said = [json.dumps(item) for item in request["items"] if "[undo]" in json.dumps(item)]
print(f"the last request carries {len(request['items'])} items; the one about the undo:")
print(json.dumps(json.loads(said[0]), indent=1) if said else "(none)")
claim(len(said) == 1 and undo.text in said[0], "the model's next request says, in words, which turn was undone and which files are back",
      otherwise="no item of the request mentions the undo")'''

CODEX = """## Where this lives in Codex

In openai/codex (each link names the commit and the lines; ghost commits and undo were removed
from Codex later, so their links are at commit `7e8594fc1986`):

- [`codex-rs/git-utils/src/ghost_commits.rs` L301-L424](https://github.com/openai/codex/blob/7e8594fc198615068018b198ab86a9ae0a541dff/codex-rs/git-utils/src/ghost_commits.rs#L301-L424) — `create_ghost_commit_with_report`
  snapshots the working tree into a commit no branch points at: a temporary `GIT_INDEX_FILE`
  seeded with `read-tree HEAD`, `git add --all`, `write-tree`, `commit-tree`.
  `restore_ghost_commit_with_options` puts the whole tree back with `git restore` and removes
  untracked files that were not there before. nbagent makes the same commit, but puts back only
  the files the turn changed (and refuses when a person has edited one since).
- [`codex-rs/core/src/tasks/ghost_snapshot.rs` L37-L158](https://github.com/openai/codex/blob/7e8594fc198615068018b198ab86a9ae0a541dff/codex-rs/core/src/tasks/ghost_snapshot.rs#L37-L158) — the task that takes the turn's ghost
  commit and records it as a `ResponseItem::GhostSnapshot` in the history (nbagent's
  `ghost_snapshot` item), and skips it when the folder is not a git repository, where nbagent uses
  a private repository instead.
- [`codex-rs/core/src/tasks/undo.rs` L27-L129](https://github.com/openai/codex/blob/7e8594fc198615068018b198ab86a9ae0a541dff/codex-rs/core/src/tasks/undo.rs#L27-L129) — `UndoTask` finds the latest `GhostSnapshot` in
  the history, restores it, drops that item from the history and ends by sending `UndoCompleted`
  ([L3247-L3252](https://github.com/openai/codex/blob/7e8594fc198615068018b198ab86a9ae0a541dff/codex-rs/protocol/src/protocol.rs#L3247-L3252) of `protocol.rs` at the same commit). In that version the model is not told;
  nbagent records an `undo` item whose text the model reads in its next request, as you just saw.
- [`codex-rs/protocol/src/protocol.rs` L1271-L1283](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/protocol/src/protocol.rs#L1271-L1283) — `apply_patch_approval_request` (the `changes` the panel draws) and
  [L3298-L3339](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/protocol/src/protocol.rs#L3298-L3339), `PatchApplyBeginEvent` / `PatchApplyEndEvent`, the events this notebook read.
  The patch format itself is Codex's `apply_patch`
  ([`codex-rs/apply-patch/src/parser.rs` L128-L135](https://github.com/openai/codex/blob/608b8b1cc6ce91064e1fd12e0810e1772b5e4710/codex-rs/apply-patch/src/parser.rs#L128-L135))."""

NBAGENT = """## Where this lives in nbagent

- `nbagent/tools/patch.py` — the `apply_patch` tool: plans the patch against the files
  (`preview`, what the approval shows), then writes all files or none, between
  `patch_apply_begin` and `patch_apply_end`; `nbagent/patch/parse.py` reads Codex's format and
  `nbagent/patch/diff.py` makes the unified diff.
- `nbagent/kit/diffview.py` and `nbagent/notebook/diffview.py` — the diff as text and as the
  panel's coloured HTML.
- `nbagent/checkpoint/ghost.py` — the ghost commit; `nbagent/checkpoint/turn.py` — one per turn,
  before its first call that may write; `nbagent/core/checkpoints.py` — the session's side:
  the `ghost_snapshot` item, the `Undo` op.
- `nbagent/checkpoint/undo.py` — the plan (refuse when a later turn or a person changed the same
  file) and the restore, and the `undo` item's text the model reads.
- `nbagent/notebook/commands.py` — `%agent undo [TURN]`; the turn header's *Undo turn* button
  submits the same op, and so does `nbagent undo THREAD --turn ID` in a terminal.

- `nbagent/checkpoint/cells.py` — the live notebook's cells: the same undo puts back the cells
  the turn changed through the bridge, read from the rollout, each only if the person has not
  changed it since. A cell the agent wrote carries a badge with *Undo*, which puts back that
  cell alone (the kernel finds the call in its own rollout, never trusting the notebook file).

**Not yet:** a deleted cell comes back without its outputs and under a new id."""

EXERCISE = '''# Each change an approval carries (`asked.changes`, as dicts: `c.model_dump()`) has a `kind`
# ("add", "update", "delete" or "move"), a `path`, and for a move the new path in `move_path`.
# Write a function that takes a list of such dicts and returns the sorted list of the paths the
# call would touch, each once. Then set `answer` to that function.
answer = ...'''

CHECK = r'''def refuse(why):
    raise AssertionError(f"Not yet: {why}")

def touches_right(fn):
    if not callable(fn):
        refuse(f"`answer` is a {type(fn).__name__}; it should be the function itself (`answer = touched`, no call)")
    ours = [c.model_dump() for c in asked.changes]
    cases = [
        (ours, ["project/calc/core.py"]),
        ([], []),
        ([{"kind": "update", "path": "b.py", "move_path": None}, {"kind": "add", "path": "a.py", "move_path": None}],
         ["a.py", "b.py"]),
        ([{"kind": "move", "path": "old/x.py", "move_path": "new/x.py"}, {"kind": "delete", "path": "z.txt", "move_path": None}],
         ["new/x.py", "old/x.py", "z.txt"]),
        ([{"kind": "update", "path": "a.py", "move_path": None}, {"kind": "move", "path": "b.py", "move_path": "a.py"}],
         ["a.py", "b.py"]),
    ]
    for changes, wanted in cases:
        try:
            got = fn([dict(c) for c in changes])
        except Exception as exc:
            refuse(f"it raised {type(exc).__name__}: {exc} (each change is a dict: c['path'], c.get('move_path'))")
        if not isinstance(got, list) or not all(isinstance(p, str) for p in got):
            refuse(f"it returned {type(got).__name__}; return a list of path strings")
        if got != wanted:
            if set(got) == set(wanted):
                refuse("the right paths, but return each once, sorted")
            kinds = sorted({c["kind"] for c in changes})
            refuse(f"for a call whose changes are of kinds {kinds}, some path is missing or extra; "
                   "which paths does a move touch?")
    return True

check(answer, touches_right,
      hint="see the message above",
      why="a move writes its new path and removes its old one, so both are touched; this list is what a "
          "reviewer reads first, and what an undo of the turn would have to put back.")'''

CELLS: list[tuple[CellKind, str]] = [
    ("markdown", """# 12 · Review a patch, then undo the turn

## The problem this boundary solves

In 08 the agent fixed a failing test, and the approval panel showed the proposed edit as JSON.
Two things are missing for a person to trust an agent with files. **Review:** before a change is
written, see it as a diff against the file as it is *now*, not as the model imagines it.
**Undo:** after a turn, put back what it changed, even if the change was approved and looked
right, and tell the model so that it does not build on a fix that is gone.

nbagent does both as Codex does: the built-in `apply_patch` tool (Codex's patch format) shows
its planned diff in the approval, and each turn that may write takes a checkpoint, a *ghost
commit*, which `%agent undo` restores from. Setup: 08's project and a scripted model (`replay:`);
this time the model edits with `apply_patch` instead of an MCP server's tool."""),
    ("code", SETUP),
    ("code", "%load_ext nbagent"),
    ("markdown", """With the autopilot on, the cell below answers the approval panel with the op the
*Approve* button sends. The tap keeps every event the turn emits."""),
    ("code", TAPS),
    ("markdown", "## A live demonstration: the patch, reviewed and applied"),
    ("code", "%%agent --wait\nThe tests of this project fail. Fix the failing test."),
    ("markdown", """### The review

Before `apply_patch` runs, nbagent plans the patch against the files on disk, writing nothing,
and the `approval_requested` event carries each file's change (Codex's `changes`): its kind,
path, the hash of the content before and after, and a unified diff. A patch that no longer
applies is shown as such instead. Every front end draws the same diff:"""),
    ("code", REVIEW),
    ("markdown", """### Applied

Once approved, the tool writes all files or none, between `patch_apply_begin` and
`patch_apply_end` (Codex's events), each carrying the per-file changes; the turn's card shows
one line per file with the lines added and removed. The test, run by this notebook itself:"""),
    ("code", APPLIED),
    ("markdown", """## The turn's checkpoint: a ghost commit

Before the turn's first call that may write, nbagent snapshotted the workspace into a git commit
no branch points at (here in a private repository under the thread's home, since the workspace
is not a git repository; inside one it would be that repository's, under a private ref). As the
turn ended it compared again, and recorded the files that differ as a `ghost_snapshot` item:"""),
    ("code", GHOST),
    ("markdown", """## Undo

`%agent undo` undoes the latest turn that changed files (`%agent undo TURN` a given one; the
*Undo turn* button on the turn's header and `nbagent undo THREAD --turn ID` do the same). It
refuses, naming the file, if you or a later turn changed one of the turn's files since, unless
`--force`."""),
    ("code", UNDO),
    ("code", BACK),
    ("markdown", """## What the model is told

A model that is not told would go on believing its fix is there. The undo is recorded in the
thread as an `undo` item, and the next model request carries it: the model reads its `text` as a
user message.
One more turn, then `%agent inspect request --json` shows that request as it was sent:"""),
    ("code", "%%agent --wait\nIs the fix still in place?"),
    ("code", TOLD),
    ("markdown", CODEX),
    ("markdown", NBAGENT),
    ("markdown", """## Exercise

A reviewer's first question about a patch is *which files does it touch?* Write the function
that answers it from the changes an approval carries. The check tries it on this run's changes
and on cases you have not seen."""),
    ("code", EXERCISE),
    ("code", CHECK),
]

WALKTHROUGH = Walkthrough(
    name="12-review-and-undo",
    title="Review a patch, then undo the turn",
    cells=CELLS,
    answer=(
        'answer = lambda changes: sorted({p for c in changes for p in (c["path"], c.get("move_path")) if p})'
    ),
    wrong_answer='answer = lambda changes: [c["path"] for c in changes]',
    timeout=120,
    files=("12-review-and-undo.json",),
)
