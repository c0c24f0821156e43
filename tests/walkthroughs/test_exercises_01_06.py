"""The exercise checks of walkthroughs 01-06, run as their cells run (each walkthrough's own
source, with the names its earlier cells define): the intended answer passes, and each kind of
wrong answer, a wrong type among them, is refused with a hint that points at the mistake, printing
nothing."""

from __future__ import annotations

import json
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest

from nbagent.examples.schema_server import BOOK_TRIP
from nbagent.examples.walkthroughs import (
    kit,
    w01_two_roles,
    w02_tool_identity,
    w03_schema_exposure,
    w04_approval,
    w05_elicitation,
    w06_metadata_and_results,
)
from nbagent.mcp.validation import compiled
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

SPACES = {
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
}

RIGHT = [
    (w03_schema_exposure, "answer = dict(booking, payment={'iban': 'X'}, companions=[booking['traveller']] * 2)"),
]
"""Right answers besides each walkthrough's intended one."""

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
