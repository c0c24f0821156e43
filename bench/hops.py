"""The way one ``%%agent`` cell takes through nbagent, measured, as a file:function list.

A real kernel (jupyter_client) runs one ``%%agent`` cell whose replay model calls the demo MCP
server's ``list_notes`` under ``full-auto``. A profile hook inside the kernel records nbagent's
frames (outermost first) at four moments that exist in any version of the code:

1. the cell hands its turn to the session (``Session.submit`` or ``Session.start``);
2. the turn sends the ``tools/call`` request (the MCP SDK's ``call_tool``, or on a stdio
   connection nbagent's own, ``mcp/direct.py``);
3. the panel takes the call's end (the first nbagent ``notebook/`` frame holding a
   ``ToolCallEnd``, as deep as it goes, then the first ipywidgets call under it);
4. the rollout writer is handed the call's output line (``store/rollout.py``).

A hop is one nbagent frame on those stacks; legs 3 and 4 count only the frames after the part
they share with leg 2 (the turn task they run in). Run from the repository root on two trees to
compare: ``.venv/bin/python bench/hops.py [--tree DIR]`` (``DIR`` another checkout, whose
``nbagent`` is imported in the kernel instead).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.notebook.harness import Kernel, demo_config, script  # noqa: E402

PROBE = r'''
import sys, os
_root = os.path.dirname(__import__("nbagent").__file__)
_legs = {}

def _nb(frame):
    out = []
    while frame is not None:
        f = frame.f_code.co_filename
        if f.startswith(_root):
            out.append(os.path.relpath(f, os.path.dirname(_root)) + ":" + frame.f_code.co_name)
        frame = frame.f_back
    return out[::-1]

def _holds(frame, name):
    for v in frame.f_locals.values():
        t = type(v).__name__
        if t == name or type(getattr(v, "msg", None)).__name__ == name or type(getattr(v, "item", None)).__name__ == name:
            return True
    return False

def _hook(frame, event, arg):
    if event != "call":
        return
    try:
        _see(frame)
    except Exception as exc:
        _legs.setdefault("errors", []).append(repr(exc))

def _see(frame):
    f, n = frame.f_code.co_filename, frame.f_code.co_name
    if f.endswith("nbagent/core/session.py") and n in ("submit", "start") and "cell" not in _legs:
        _legs["cell"] = _nb(frame)
    elif n == "call_tool" and ("/mcp/client/" in f or f.endswith("nbagent/mcp/direct.py")) and "call" not in _legs:
        _legs["call"] = _nb(frame)
    elif f.startswith(_root) and "/notebook/" in f and _holds(frame, "ToolCallEnd"):
        stack = _nb(frame)
        if len(stack) > len(_legs.get("panel", [])):
            _legs["panel"] = stack
    elif "/ipywidgets/" in f and "panel" in _legs and "widget" not in _legs and _nb(frame)[:len(_legs["panel"])] == _legs["panel"]:
        _legs["widget"] = _nb(frame)
    elif f.endswith("nbagent/store/rollout.py") and _holds(frame, "FunctionCallOutput") and "rollout" not in _legs:
        _legs["rollout"] = _nb(frame)

sys.setprofile(_hook)
'''


def measure(tree: Path) -> dict[str, list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        replay = script(work / "replay.json", {"tool_calls": [{"name": "mcp__demo__list_notes", "arguments": {}}]}, {"text": "Listed."})
        demo_config(work, replay, work / "record.jsonl")
        kernel = Kernel(work, env={"NBAGENT_HOME": str(work / "home"), "PYTHONPATH": str(tree), "NBAGENT_TRUSTED_FOLDERS": str(work)})
        try:
            kernel.run("%load_ext nbagent")
            kernel.run(PROBE)
            _, shown = kernel.run("%%agent --wait --policy full-auto\nlist my notes")
            kernel.run("sys.setprofile(None)")
            legs = kernel.eval("_legs")
        finally:
            kernel.close()
    missing = {"cell", "call", "panel", "rollout"} - legs.keys()
    if missing:
        raise SystemExit(f"the probe did not see: {sorted(missing)} (saw {sorted(legs)}; errors {legs.get('errors', [])[:3]}); the cell showed:\n{shown}")
    return legs


def after_shared(stack: list[str], base: list[str]) -> list[str]:
    n = 0
    while n < min(len(stack), len(base)) and stack[n] == base[n]:
        n += 1
    return stack[n:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=REPO, help="a checkout whose nbagent the kernel imports")
    args = parser.parse_args()
    legs = measure(args.tree.resolve())
    panel = legs.get("widget", legs["panel"])
    path = {
        "1 cell -> session": legs["cell"],
        "2 turn -> tools/call": legs["call"],
        "3 -> panel": after_shared(panel, legs["call"]),
        "4 -> rollout line": after_shared(legs["rollout"], legs["call"]),
    }
    hops = [hop for leg in path.values() for hop in leg]
    files = [hop.split(":")[0] for hop in hops]
    entered: dict[str, int] = {}
    for leg in path.values():
        previous = None
        for hop in leg:
            file = hop.split(":")[0]
            if file != previous:
                entered[file] = entered.get(file, 0) + 1
            previous = file
    for name, leg in path.items():
        print(f"{name} ({len(leg)} hops)")
        for hop in leg:
            print(f"    {hop}")
    print(json.dumps({"hops": len(hops), "files": len(set(files)),
                      "entered_more_than_twice": {f: n for f, n in entered.items() if n > 2}}))


if __name__ == "__main__":
    main()
