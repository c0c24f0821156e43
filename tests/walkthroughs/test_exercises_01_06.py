"""The exercise checks of walkthroughs 01-06, run as their cells run (each walkthrough's own
source, with the names its earlier cells define): the intended answer passes, and each kind of
wrong answer, a wrong type among them, is refused with a hint that points at the mistake, printing
nothing."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from nbagent.examples.walkthroughs import (
    kit,
    w01_two_roles,
    w02_tool_identity,
    w03_schema_exposure,
    w04_approval,
    w05_elicitation,
    w06_metadata_and_results,
)
from nbagent.examples.schema_server import BOOK_TRIP
from nbagent.mcp.validation import compiled
from nbagent.schema.sanitize import sanitize_schema
from nbagent.server.tools import TOOLS


def _run(check: str, answer_line: str, space: dict[str, Any]) -> None:
    space = {"check": kit.check, **space}
    exec(answer_line, space)
    exec(check, space)


def _passes(check: str, answer_line: str, space: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    _run(check, answer_line, space)
    assert capsys.readouterr().out.startswith("Right.")


def _refused(check: str, answer_line: str, hint: str, space: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(AssertionError, match="^Not yet: ") as refused:
        _run(check, answer_line, space)
    assert hint in str(refused.value)
    assert not capsys.readouterr().out, "a refusal prints nothing, the answer least of all"
    _run(check, "answer = ...", space)
    assert capsys.readouterr().out.startswith("Exercise:")


# -- 01: continuing a thread from an outside MCP client ---------------------------------------

W01 = {
    "listed": SimpleNamespace(tools=TOOLS),
    "result": SimpleNamespace(structured_content={"thread_id": "thread_outer", "text": "Two notes."}),
    "session": SimpleNamespace(snapshot=lambda: SimpleNamespace(thread_id="thread_inner")),
}


def test_01_the_reply_arguments_pass(capsys: pytest.CaptureFixture[str]) -> None:
    _passes(w01_two_roles.CHECK, w01_two_roles.WALKTHROUGH.answer, W01, capsys)


@pytest.mark.parametrize(
    ("answer_line", "hint"),
    [
        (w01_two_roles.WALKTHROUGH.wrong_answer, "not the thread the `agent` call started"),
        ('answer = {"prompt": "Now read the note back."}', '"thread_id" is a required property'),
        ('answer = {"thread_id": result.structured_content["thread_id"], "prompt": " "}', "the prompt is empty"),
        ('answer = ("agent-reply", result.structured_content["thread_id"])', "call_tool takes the arguments as a dict"),
        ('answer = {"agent", "agent-reply"}', "is a set"),
    ],
    ids=["inner-thread", "no-thread", "empty-prompt", "tuple", "set"],
)
def test_01_wrong_reply_arguments_are_refused(answer_line: str, hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    _refused(w01_two_roles.CHECK, answer_line, hint, W01, capsys)


# -- 02: the model-visible name of (server, tool) ----------------------------------------------

W02 = {"__builtins__": __builtins__}
exec("from nbagent.mcp.identity import MAX_NAME_LEN, base_name, hashed_name, raw_digest, sanitize_name", W02)


def test_02_the_naming_rule_passes(capsys: pytest.CaptureFixture[str]) -> None:
    _passes(w02_tool_identity.CHECK, w02_tool_identity.WALKTHROUGH.answer, W02, capsys)


@pytest.mark.parametrize(
    ("answer_line", "hint"),
    [
        (w02_tool_identity.WALKTHROUGH.wrong_answer, "characters the model API refuses"),
        ("answer = lambda server, tool: base_name(server, tool)", "past the API's 64"),
        ("answer = lambda server, tool: base_name(server, tool)[:64]", "what does it end with?"),
        ("answer = lambda server, tool: hashed_name(base_name(server, tool), raw_digest((server, tool)))",
         "a name that fits keeps its full form"),
        ("answer = lambda server, tool: hashed_name(base_name(server, tool), raw_digest((tool, server))) "
         "if len(base_name(server, tool)) > 64 else base_name(server, tool)", "what exactly does the hash digest"),
        ('answer = base_name("git", "status")', "it should be the function itself"),
        ("answer = lambda server, tool: (server, tool)", "return the name as a str"),
        ("answer = lambda server, tool: qualify_tools([(server, tool)]).by_raw[(server, tool)]", "it calls qualify_tools"),
    ],
    ids=["unsanitised", "too-long", "cut-no-hash", "always-hashed", "wrong-digest", "not-a-function", "not-a-str", "qualify"],
)
def test_02_a_wrong_naming_rule_is_refused(answer_line: str, hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    _refused(w02_tool_identity.CHECK, answer_line, hint, W02, capsys)


# -- 03: arguments the model's schema accepts and the server's refuses -------------------------

BOOKING = {"traveller": {"name": "Ada", "email": "ada@example.com", "age": 36}, "depart": "2027-03-14", "cabin": "economy",
           "currency": "EUR", "payment": {"card": "4111111111111111", "iban": "DE89370400440532013000"},
           "legs": ["CDG", "FCO"], "flexible": False}  # fmt: skip
W03 = {"raw": BOOK_TRIP, "exposed": sanitize_schema(BOOK_TRIP)[0], "booking": BOOKING, "compiled": compiled}
_HELPER = w03_schema_exposure.SERVER_GOT.split("\n\n")
exec(next(block for block in _HELPER if block.startswith("def problems")), W03)  # the notebook's own helper


def test_03_a_gap_between_the_schemas_passes(capsys: pytest.CaptureFixture[str]) -> None:
    _passes(w03_schema_exposure.CHECK, w03_schema_exposure.WALKTHROUGH.answer, W03, capsys)
    ada = '{"name": "Ada", "email": "ada@example.com"}'
    _passes(w03_schema_exposure.CHECK, f"answer = dict(booking, payment={{'iban': 'X'}}, companions=[{ada}, {ada}])", W03, capsys)


@pytest.mark.parametrize(
    ("answer_line", "hint"),
    [
        (w03_schema_exposure.WALKTHROUGH.wrong_answer, "where the model's booking already showed a gap"),
        ('answer = dict(booking, payment={"iban": "X"}, flexible=True)', "the server's schema accepts it too"),
        ('answer = dict(booking, payment={"iban": "X"}, flexible=True, currency="USD")', "the model could not send that"),
        ("answer = json.dumps(booking)", "a tool's arguments are a JSON object, a dict"),
    ],
    ids=["payment-again", "valid-everywhere", "refused-by-both", "a-string"],
)
def test_03_a_wrong_gap_is_refused(answer_line: str, hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    _refused(w03_schema_exposure.CHECK, answer_line, hint, {**W03, "json": __import__("json")}, capsys)


# -- 04: the policy table as a function --------------------------------------------------------


def test_04_the_policy_table_passes(capsys: pytest.CaptureFixture[str]) -> None:
    _passes(w04_approval.CHECK, w04_approval.WALKTHROUGH.answer, {}, capsys)


@pytest.mark.parametrize(
    ("answer_line", "hint"),
    [
        (w04_approval.WALKTHROUGH.wrong_answer, "when does it count?"),
        ('answer = lambda policy, a, trusted: "runs" if policy == "full-auto" or (trusted and a and a.get("readOnlyHint")) '
         'else "declined" if policy == "never" else "asks"', "is not safe, whatever else it says"),
        ('answer = lambda policy, a, trusted: "runs" if policy == "full-auto" or (trusted and a and a.get("readOnlyHint") '
         'and not a.get("destructiveHint")) else "asks"', "there is nobody to ask"),
        ('answer = lambda policy, a, trusted: "runs" if a["readOnlyHint"] else "asks"', "raised TypeError"),
        ('answer = lambda policy, a, trusted: a is not None', "return 'runs', 'asks' or 'declined'"),
        ('answer = {"on-request": "asks"}', "it should be the function itself"),
    ],
    ids=["untrusted-hint", "destructive", "never", "none-annotations", "not-a-verdict", "not-a-function"],
)
def test_04_a_wrong_policy_table_is_refused(answer_line: str, hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    _refused(w04_approval.CHECK, answer_line, hint, {}, capsys)


# -- 06: the result wrapper --------------------------------------------------------------------

W06 = {"__builtins__": __builtins__}
exec("import base64, json", W06)


def test_06_the_result_wrapper_passes(capsys: pytest.CaptureFixture[str]) -> None:
    _passes(w06_metadata_and_results.CHECK, w06_metadata_and_results.WALKTHROUGH.answer, W06, capsys)


@pytest.mark.parametrize(
    ("answer_line", "hint"),
    [
        (w06_metadata_and_results.WALKTHROUGH.wrong_answer, "for a result with an image after a text"),
        ("answer = lambda r: '\\n'.join([b['text'] for b in r['content'] if b['type'] == 'text'] "
         "+ [json.dumps(r['structuredContent'])] if 'structuredContent' in r else [])", "the model would read something else"),
        ("answer = lambda r: r['content'][0].text", "it raised AttributeError"),
        ("answer = lambda r: r['content']", "return the text, a str"),
        ("answer = 'done'", "it should be the function itself"),
    ],
    ids=["texts-only", "structured-spaced", "attribute-access", "not-a-str", "not-a-function"],
)
def test_06_a_wrong_result_wrapper_is_refused(answer_line: str, hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    _refused(w06_metadata_and_results.CHECK, answer_line, hint, W06, capsys)


# -- 05: a form's defaults, filled in by code answering for a person ----------------------------


def test_05_filling_defaults_passes(capsys: pytest.CaptureFixture[str]) -> None:
    _passes(w05_elicitation.CHECK, w05_elicitation.WALKTHROUGH.answer, {}, capsys)


@pytest.mark.parametrize(
    ("answer_line", "hint"),
    [
        (w05_elicitation.WALKTHROUGH.wrong_answer, "which fields does a default fill"),
        ("answer = lambda schema, content: {**content, **{n: f['default'] for n, f in schema['properties'].items() "
         "if 'default' in f and content.get(n) is None}}", "raised TypeError"),
        ("def answer(schema, content):\n    for n, f in schema['properties'].items():\n"
         "        if 'default' in f and (content or {}).get(n) is None and content is not None:\n"
         "            content[n] = f['default']\n    return content or {}", "changed the content it was given"),
        ("answer = lambda schema, content: [content]", "return the content, a dict"),
        ("answer = {'date': '2027-01-04', 'people': 2}", "it should be the function itself"),
        ("answer = lambda schema, content: apply_defaults(schema, content)", "it calls apply_defaults"),
    ],
    ids=["defaults-override", "none-content", "mutates", "not-a-dict", "not-a-function", "library"],
)
def test_05_a_wrong_fill_is_refused(answer_line: str, hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    _refused(w05_elicitation.CHECK, answer_line, hint, {}, capsys)
