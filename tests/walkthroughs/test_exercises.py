"""Every walkthrough's exercise check, run as its cell runs (each walkthrough's own source, with
the names its earlier cells define, or stand-ins for what its run made: a turn's events, a test
report, an approval, startup updates): the intended answer passes, and each kind of wrong answer,
a wrong type among them, is refused with a hint that points at the mistake without giving the
answer, printing nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from nbagent.examples.schema_server import BOOK_TRIP
from nbagent.examples.walkthroughs import (
    kit,
    w00_loop_by_hand,
    w01_two_roles,
    w02_tool_identity,
    w03_schema_exposure,
    w04_approval,
    w05_elicitation,
    w06_metadata_and_results,
    w07_events_and_state,
    w08_fix_a_failing_test,
    w10_many_tools,
    w11_sandbox,
    w12_review_and_undo,
    w13_lifecycle_and_state,
)
from nbagent.mcp.validation import compiled
from nbagent.protocol import (
    AgentMessage,
    ApprovalRequested,
    Event,
    FunctionCall,
    FunctionCallOutput,
    McpStartupUpdate,
    PatchChange,
    ToolCallBegin,
    ToolCallEnd,
    ToolSpec,
)
from nbagent.schema.sanitize import sanitize_schema
from nbagent.server.tools import TOOLS


def _space(code: str = "", **names: Any) -> dict[str, Any]:
    """The names a walkthrough's earlier cells leave for its exercise: ``code`` run, ``names`` set."""
    space: dict[str, Any] = {"check": kit.check, **names}
    exec(code, space)
    return space


BOOKING = {"traveller": {"name": "Ada", "email": "ada@example.com", "age": 36}, "depart": "2027-03-14", "cabin": "economy",
           "currency": "EUR", "payment": {"card": "4111111111111111", "iban": "DE89370400440532013000"},
           "legs": ["CDG", "FCO"], "flexible": False}  # fmt: skip
"""The arguments 03's scripted model books the trip with."""

EVENTS = [
    Event(seq=1, turn_id="turn_1", msg=ToolCallBegin(call_id="call_1", tool="mcp__workspace__read_file")),
    Event(seq=2, turn_id="turn_1", msg=ToolCallEnd(call_id="call_1", tool="mcp__workspace__read_file", output="# calc")),
    Event(seq=3, turn_id="turn_1", msg=AgentMessage(item_id="msg_1", text="It says calc.add adds two numbers.")),
]
"""07: a turn's events, as the ``events`` its exercise folds."""

REPORT = (
    "Error executing tool run_tests: pytest exited with 1\nF" + " " * 72 + "[100%]\n"
    "=================================== FAILURES ===================================\n"
    ">       assert add(2, 3) == 5\nE       assert -1 == 5\n\ntests/test_core.py:5: AssertionError\n"
    "=========================== short test summary info ============================\n"
    "FAILED tests/test_core.py::test_add - assert -1 == 5\n1 failed in 0.02s"
)
"""08: a failed ``run_tests`` output, among the ``outputs`` its exercise reads."""

OWN = ["apply_patch", "shell", "read_notebook", "insert_cell", "run_python"]
PLATFORM = [ToolSpec(name=f"mcp__platform__{n}", server="platform", raw_name=n)
            for n in ("create_pull_request", "delete_pull_request", "list_issues", "close_issue", "fork_repo")]
"""10: the catalogue, the notebook's own tools and some of the platform server's; the thread
called ``create_pull_request``."""

UPDATES = [
    McpStartupUpdate(server="broken", status="starting"),
    McpStartupUpdate(server="broken", status="failed", error="exit code 2", stderr_tail="STATION_KEY is not set"),
    McpStartupUpdate(server="life", status="starting"),
    McpStartupUpdate(server="life", status="ready", tools=3),
]
"""13: a run's startup updates, as ``of_type`` gives them."""

SPACES = {
    w00_loop_by_hand: _space,
    # 01: the outside client's `listed` tools and the `result` of its `agent` call.
    w01_two_roles: lambda: _space(
        listed=SimpleNamespace(tools=TOOLS),
        result=SimpleNamespace(structured_content={"thread_id": "thread_outer", "text": "Two notes."}),
        session=SimpleNamespace(snapshot=lambda: SimpleNamespace(thread_id="thread_inner")),
    ),
    w02_tool_identity: lambda: _space(
        "from nbagent.mcp.identity import MAX_NAME_LEN, base_name, hashed_name, raw_digest, sanitize_name"
    ),
    # 03: both schemas of book_trip, the model's booking, and the notebook's own `problems` helper.
    w03_schema_exposure: lambda: _space(
        next(block for block in w03_schema_exposure.SERVER_GOT.split("\n\n") if block.startswith("def problems")),
        raw=BOOK_TRIP, exposed=sanitize_schema(BOOK_TRIP)[0], booking=BOOKING, compiled=compiled, json=json,
    ),
    w04_approval: _space,
    w05_elicitation: _space,
    w06_metadata_and_results: lambda: _space("import base64, json"),
    w07_events_and_state: lambda: _space(events=EVENTS, first_turn="turn_1"),
    w08_fix_a_failing_test: lambda: _space(outputs={
        "call_1": FunctionCallOutput(call_id="call_1", output=REPORT, is_error=True, status="failed"),
        "call_2": FunctionCallOutput(call_id="call_2", output="def add(a, b):\n    return a - b\n"),
    }),
    w10_many_tools: lambda: _space(
        catalogue=[ToolSpec(name=n) for n in OWN] + PLATFORM, platform=PLATFORM,
        session=SimpleNamespace(snapshot=lambda: SimpleNamespace(
            items=[FunctionCall(call_id="call_1", name="mcp__platform__create_pull_request", arguments="{}")])),
    ),
    w11_sandbox: lambda: _space(os=os, Path=Path),
    # 12: this run's approval of a patch, as the ``asked`` its exercise reads.
    w12_review_and_undo: lambda: _space(asked=ApprovalRequested(
        call_id="call_1", tool="apply_patch",
        changes=[PatchChange(kind="update", path="project/calc/core.py", unified_diff="@@\n-    return a - b\n+    return a + b\n")],
    )),
    w13_lifecycle_and_state: lambda: _space(of_type=lambda kind: UPDATES if kind == "mcp_startup_update" else []),
}

RIGHT = [
    (w03_schema_exposure, "answer = dict(booking, payment={'iban': 'X'}, companions=[booking['traveller']] * 2)"),
    (w07_events_and_state, "def ended(events):\n    state = {}\n    for e in events:\n"
     "        if e.msg.type == 'tool_call_begin':\n            state[e.msg.call_id] = 'running'\n"
     "        elif e.msg.type == 'tool_call_end':\n            state[e.msg.call_id] = e.msg.status\n"
     "    return state\nanswer = ended"),
]
"""Right answers besides each walkthrough's intended one."""

OVER_CAP = (
    "def carried(cap, own, in_view):\n    room = cap - 1\n    if len(own) > room:\n        room -= max(1, cap // 4)\n"
    "    return [*own[:room], 'search_tools', *reversed(in_view)]\nanswer = carried"
)
"""10: a request that carries every tool in view, past the cap."""
PREFIX_ONLY = (
    "def may_write(path, workspace, writable_roots):\n"
    "    real = lambda p: os.path.realpath(os.path.join(workspace, p))\n"
    "    target = real(path)\n"
    "    return any(target.startswith(real(r)) for r in ['.', *writable_roots]) and '/.git/' not in target + '/'\n"
    "answer = may_write"
)
"""11: a root compared as a string prefix."""
NO_REALPATH = (
    "def may_write(path, workspace, writable_roots):\n"
    "    target = os.path.normpath(os.path.join(workspace, path))\n"
    "    roots = [os.path.normpath(os.path.join(workspace, r)) for r in ['.', *writable_roots]]\n"
    "    inside = lambda f: os.path.commonpath([target, f]) == f\n"
    "    return any(map(inside, roots)) and not any(inside(os.path.join(r, '.git')) for r in roots)\n"
    "answer = may_write"
)
"""11: paths compared without following symlinks."""

WRONG = [
    (w01_two_roles, None, "not the thread the `agent` call started"),
    (w01_two_roles, 'answer = {"prompt": "Now read the note back."}', '"thread_id" is a required property'),
    (w01_two_roles, 'answer = {"thread_id": result.structured_content["thread_id"], "prompt": " "}', "the prompt is empty"),
    (w01_two_roles, 'answer = ("agent-reply", result.structured_content["thread_id"])', "call_tool takes the arguments as a dict"),
    (w01_two_roles, 'answer = {"agent", "agent-reply"}', "is a set"),
    (w02_tool_identity, None, "characters the model API refuses"),
    (w02_tool_identity, "answer = lambda server, tool: base_name(server, tool)", "past the API's 64"),
    (w02_tool_identity, "answer = lambda server, tool: base_name(server, tool)[:64]", "what does it end with?"),
    (w02_tool_identity, "answer = lambda server, tool: hashed_name(base_name(server, tool), raw_digest((server, tool)))",
     "a name that fits keeps its full form"),
    (w02_tool_identity, "answer = lambda server, tool: hashed_name(base_name(server, tool), raw_digest((tool, server))) "
     "if len(base_name(server, tool)) > 64 else base_name(server, tool)", "what exactly does the hash digest"),
    (w02_tool_identity, 'answer = base_name("git", "status")', "it should be the function itself"),
    (w02_tool_identity, "answer = lambda server, tool: (server, tool)", "return the name as a str"),
    (w02_tool_identity, "answer = lambda server, tool: qualify_tools([(server, tool)]).by_raw[(server, tool)]",
     "it calls qualify_tools"),
    (w03_schema_exposure, None, "where the model's booking already showed a gap"),
    (w03_schema_exposure, 'answer = dict(booking, payment={"iban": "X"}, flexible=True)', "the server's schema accepts it too"),
    (w03_schema_exposure, 'answer = dict(booking, payment={"iban": "X"}, currency="USD", extras={"x-a": 1})',
     "the model could not send that"),
    (w03_schema_exposure, "answer = json.dumps(booking)", "a tool's arguments are a JSON object, a dict"),
    (w04_approval, None, "when does it count?"),
    (w04_approval, 'answer = lambda policy, a, trusted: "runs" if policy == "full-auto" or (trusted and a and '
     'a.get("readOnlyHint")) else "declined" if policy == "never" else "asks"', "is not safe, whatever else it says"),
    (w04_approval, 'answer = lambda policy, a, trusted: "runs" if policy == "full-auto" or (trusted and a and '
     'a.get("readOnlyHint") and not a.get("destructiveHint")) else "asks"', "there is nobody to ask"),
    (w04_approval, 'answer = lambda policy, a, trusted: "runs" if a["readOnlyHint"] else "asks"', "raised TypeError"),
    (w04_approval, "answer = lambda policy, a, trusted: a is not None", "return 'runs', 'asks' or 'declined'"),
    (w04_approval, 'answer = {"on-request": "asks"}', "it should be the function itself"),
    (w05_elicitation, None, "which fields does a default fill"),
    (w05_elicitation, "answer = lambda schema, content: {**content, **{n: f['default'] for n, f in "
     "schema['properties'].items() if 'default' in f and content.get(n) is None}}", "raised TypeError"),
    (w05_elicitation, "def answer(schema, content):\n    for n, f in schema['properties'].items():\n"
     "        if 'default' in f and (content or {}).get(n) is None and content is not None:\n"
     "            content[n] = f['default']\n    return content or {}", "changed the content it was given"),
    (w05_elicitation, "answer = lambda schema, content: [content]", "return the content, a dict"),
    (w05_elicitation, "answer = {'date': '2027-01-04', 'people': 2}", "it should be the function itself"),
    (w05_elicitation, "answer = lambda schema, content: apply_defaults(schema, content)", "it calls apply_defaults"),
    (w06_metadata_and_results, None, "for a result with an image after a text"),
    (w06_metadata_and_results, "answer = lambda r: '\\n'.join([b['text'] for b in r['content'] if b['type'] == 'text'] "
     "+ [json.dumps(r['structuredContent'])] if 'structuredContent' in r else [])", "the model would read something else"),
    (w06_metadata_and_results, "answer = lambda r: r['content'][0].text", "it raised AttributeError"),
    (w06_metadata_and_results, "answer = lambda r: r['content']", "return the text, a str"),
    (w06_metadata_and_results, "answer = 'done'", "it should be the function itself"),
    (w00_loop_by_hand, None, "that is the Chat Completions shape"),
    (w00_loop_by_hand, 'answer = lambda tool: {"type": "function", "name": tool.title, "description": tool.description, '
     '"parameters": tool.input_schema}', "not its title"),
    (w00_loop_by_hand, 'answer = lambda tool: {"type": "function", "name": tool["name"]}', "it raised TypeError"),
    (w00_loop_by_hand, 'answer = lambda tool: {"type": "function", "name": tool.name, "description": tool.description, '
     '"parameters": {"type": "object"}}', "not its input schema"),
    (w00_loop_by_hand, "answer = lambda tool: tool", "return a dict"),
    (w00_loop_by_hand, 'answer = {"type": "function"}', "the answer is the function itself"),
    (w07_events_and_state, None, "one entry per call that began"),
    (w07_events_and_state, "answer = lambda events: {e.msg.call_id: e.msg.status for e in events}", "it raised AttributeError"),
    (w07_events_and_state, "answer = lambda events: {e.msg.call_id: ('failed' if e.msg.is_error else 'completed') if "
     "e.msg.type == 'tool_call_end' else 'running' for e in events if e.msg.type.startswith('tool_call')}", "a status is off"),
    (w07_events_and_state, "answer = {'call_1': 'completed'}", "it should be the function itself"),
    (w07_events_and_state, "answer = lambda events: [e.msg.call_id for e in events if e.msg.type == 'tool_call_begin']",
     "return a dict"),
    (w08_fix_a_failing_test, None, "still carries the rest of its line"),
    (w08_fix_a_failing_test, "answer = lambda report: [l.split()[1] for l in report.splitlines() if l.startswith('FAILED ')]",
     "return each once, sorted"),
    (w08_fix_a_failing_test, "answer = lambda report: sorted(l.split(' - ')[0][7:] for l in report.splitlines() "
     "if l.startswith('FAILED') and ' - ' in l)", "a failing test is missing or extra"),
    (w08_fix_a_failing_test, "answer = lambda report: [report.splitlines()[99]]", "it raised IndexError"),
    (w08_fix_a_failing_test, "answer = lambda report: ' '.join(sorted(l.split()[1] for l in report.splitlines() "
     "if l.startswith('FAILED')))", "return a list of test id strings"),
    (w08_fix_a_failing_test, "answer = ['tests/test_core.py::test_add']", "it should be the function itself"),
    (w10_many_tools, None, "a quarter of the cap (at least one) stays for tools in view"),
    (w10_many_tools, "answer = lambda cap, own, in_view: [*own[:cap - 2], 'search_tools', *in_view][:cap]", "newest first"),
    (w10_many_tools, "answer = lambda cap, own, in_view: [*own[:cap - 2], *reversed(in_view)][:cap]", "search_tools is missing"),
    (w10_many_tools, OVER_CAP, "at most cap"),
    (w10_many_tools, "answer = lambda cap, own, in_view: ','.join(own)", "return a list of tool names"),
    (w10_many_tools, "answer = lambda cap, own, in_view: own[cap + 10]", "it raised IndexError"),
    (w10_many_tools, 'answer = ["mcp__platform__create_pull_request"]', "it should be the function itself"),
    (w11_sandbox, None, "an absolute path is the same file"),
    (w11_sandbox, "answer = lambda path, workspace, writable_roots: '.git/' not in path + '/'", "resolve `..` first"),
    (w11_sandbox, PREFIX_ONLY, "not inside it"),
    (w11_sandbox, NO_REALPATH, "the kernel follows symlinks"),
    (w11_sandbox, "answer = lambda path, workspace, writable_roots: os.path.realpath(os.path.join(workspace, path))"
     ".startswith(workspace + '/') and '.git' not in path", "an ordinary file"),
    (w11_sandbox, "answer = lambda path, workspace, writable_roots: 'yes'", "return True or False"),
    (w11_sandbox, "answer = lambda path, workspace, writable_roots: path.startswith(workspace.parts[0])", "raised AttributeError"),
    (w11_sandbox, "answer = True", "it should be the function itself"),
    (w12_review_and_undo, None, "return each once, sorted"),
    (w12_review_and_undo, 'answer = lambda changes: sorted({c["path"] for c in changes})', "which paths does a move touch?"),
    (w12_review_and_undo, "answer = sorted(c.path for c in asked.changes)", "it should be the function itself"),
    (w12_review_and_undo, 'answer = lambda changes: ",".join(c["path"] for c in changes)', "return a list of path strings"),
    (w12_review_and_undo, "answer = lambda changes: [c.path for c in changes]", "it raised AttributeError"),
    (w13_lifecycle_and_state, None, "a restart count is off"),
    (w13_lifecycle_and_state, "answer = lambda ups: {u['server']: (ups[0]['status'], 0) for u in ups}", "a final status is wrong"),
    (w13_lifecycle_and_state, "answer = lambda ups: {s: ([u['status'] for u in ups if u['server'] == s][-1], "
     "sum(u['status'] == 'starting' for u in ups if u['server'] == s) - 1) "
     "for s in {u['server'] for u in ups if u['status'] == 'starting'}}", "some server is missing or extra"),
    (w13_lifecycle_and_state, "answer = {}", "it should be the function itself"),
    (w13_lifecycle_and_state, "answer = lambda ups: [(u['server'], u['status']) for u in ups]", "return a dict keyed by server name"),
    (w13_lifecycle_and_state, "answer = lambda ups: {u.server: (u.status, 0) for u in ups}", "it raised AttributeError"),
]
"""Wrong answers (None: the walkthrough's own ``wrong_answer``) and a phrase of the hint each gets."""


def _run(module: ModuleType, answer_line: str) -> None:
    space = SPACES[module]()
    exec(answer_line, space)
    exec(module.CHECK, space)


def _id(module: ModuleType) -> str:
    return module.WALKTHROUGH.name[:2]


@pytest.mark.parametrize(
    ("module", "answer_line"),
    [*((m, m.WALKTHROUGH.answer) for m in SPACES), *RIGHT],
    ids=[*(_id(m) for m in SPACES), *(f"{_id(m)}-other" for m, _ in RIGHT)],
)
def test_a_right_answer_passes(module: ModuleType, answer_line: str, capsys: pytest.CaptureFixture[str]) -> None:
    _run(module, answer_line)
    assert capsys.readouterr().out.startswith("Right.")


@pytest.mark.parametrize(("module", "answer_line", "hint"), WRONG, ids=[f"{_id(m)}-{n}" for n, (m, _, _) in enumerate(WRONG)])
def test_a_wrong_answer_is_refused_with_a_hint(
    module: ModuleType, answer_line: str | None, hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(AssertionError, match="^Not yet: ") as refused:
        _run(module, answer_line or module.WALKTHROUGH.wrong_answer)
    assert hint in str(refused.value)
    assert not capsys.readouterr().out, "a refusal prints nothing, the answer least of all"


@pytest.mark.parametrize("module", SPACES, ids=_id)
def test_the_unanswered_exercise_says_what_to_do(module: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    _run(module, "answer = ...")
    assert capsys.readouterr().out.startswith("Exercise:")
