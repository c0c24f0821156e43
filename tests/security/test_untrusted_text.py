"""Untrusted text is shown, never obeyed: a real hostile MCP server and the replay model put
bidi overrides, terminal escape sequences (clear screen, window title, OSC 52 clipboard write),
``javascript:`` URLs and raw HTML in everything nbagent shows, and every front end shows it as
inert text: the approval panel, the text renderer, ``nbagent run`` / ``nbagent tools``, the
question form and the model's Markdown."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nbagent import Session
from nbagent.protocol import Event
from tests.security.untrusted_fixtures import call, hostile_text_server, replay

BIDI = "\u202e"
ESC = "\x1b"
SEQUENCES = ("\x1b[2J", "\x1b]0;", "\x1b]52;")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    for key in ("NBAGENT_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path / "home"


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def _run_against_hostile(
    tmp_path: Path, pick: str, arguments: dict[str, Any], *, policy: str, front_end=None
) -> tuple[Session, list[Event], Path]:
    """One turn in which the model calls the hostile tool whose raw name starts with ``pick``."""
    record = tmp_path / "record.jsonl"
    events: list[Event] = []
    session = Session(policy=policy, mcp_servers={"evil": hostile_text_server(record)}, interactive=True)
    async with session:
        await session._servers.ready()
        tool = next(s.name for s in session._tools() if (s.raw_name or "").startswith(pick))
        model = replay(tmp_path / "script.json", call(tool, **arguments), {"text": "done"})
        session.subscribe(events.append)
        if front_end is not None:
            session.subscribe(lambda e: front_end(session, e))
        await asyncio.wait_for(session.run("go", model=model), 60)
    return session, events, record


async def test_the_approval_panel_shows_bidi_and_escapes_in_title_raw_name_and_arguments(
    home: Path, tmp_path: Path
) -> None:
    from nbagent.notebook.approval import ApprovalPanel

    panels: list[ApprovalPanel] = []

    def front_end(session: Session, event: Event) -> None:
        if event.msg.type == "approval_requested":
            panel = ApprovalPanel(event.msg, session.submit)
            panels.append(panel)
            assert panel.decide("approve")  # the shown arguments, unedited

    hostile_args = {"path": f"notes{BIDI}txt.exe", "text": f"hi{ESC}]52;c;cm0=\x07"}
    for pick in ("run", "esc"):
        _, _, record = await _run_against_hostile(tmp_path, pick, hostile_args, policy="untrusted", front_end=front_end)
    assert len(panels) == 2
    for panel in panels:
        shown = panel.identity.value + panel.info.value + panel.arguments.value + panel.record.value
        assert BIDI not in shown and ESC not in shown and "\x07" not in shown
    bidi, esc = (p.identity.value + p.info.value for p in panels)  # identity: the title and raw name
    assert bidi.count("&lt;U+202E&gt;") >= 2  # the title and the raw name
    assert esc.count("&lt;U+001B&gt;]0;") >= 2 and "&lt;U+001B&gt;]52;" in esc
    assert "\\u202e" in panels[0].arguments.value and "\\u001b]52;" in panels[0].arguments.value
    # Approving what was shown runs exactly what the model asked for: the escapes are only display.
    assert [r["arguments"] for r in records(record)] == [hostile_args, hostile_args]


async def test_the_text_renderer_prints_escape_sequences_inert(home: Path, tmp_path: Path) -> None:
    from nbagent.notebook.text_render import TextTurn

    printed: list[str] = []
    turn = TextTurn(lambda op: None, model_label="replay", scripted=True, thread="t", policy="full-auto", out=printed.append)
    _, events, _ = await _run_against_hostile(tmp_path, "esc", {"text": f"x{BIDI}"}, policy="full-auto")
    for event in events:
        turn.handle(event)
    text = "".join(printed)
    assert "output" in text and "[turn completed]" in text
    assert ESC not in text and BIDI not in text and "\x07" not in text
    assert "<U+001B>]52;c;" in text and "<U+202E>" in text


def _cli(work: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NBAGENT_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["NBAGENT_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "nbagent.cli", "-C", str(work), *args],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_nbagent_run_and_tools_print_escape_sequences_inert(tmp_path: Path) -> None:
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    server = hostile_text_server(tmp_path / "record.jsonl")
    (work / "nbagent.toml").write_text(
        "[mcp_servers.evil]\n"
        f"command = {json.dumps(server.command)}\nargs = {json.dumps(server.args)}\n"
        f'protocol = "legacy"\nenv = {{ HOSTILE_SET = "text" }}\n'
    )
    listed = _cli(work, home, "tools", "--json")
    assert listed.returncode == 0, listed.stderr
    tool = next(row["name"] for row in json.loads(listed.stdout)["tools"] if row["raw_tool"].startswith("esc"))
    model = replay(tmp_path / "script.json", call(tool, text="x"), {"text": f"the end{ESC}]0;title\x07{BIDI}"})
    for args in (("tools",), ("run", "-m", model, "--policy", "full-auto", "go")):
        done = _cli(work, home, *args)
        assert done.returncode == 0, done.stderr
        assert ESC not in done.stdout and BIDI not in done.stdout and "\x07" not in done.stdout, args
        assert "<U+001B>" in done.stdout, (args, done.stdout)  # the table cuts a long title: its start is shown
    assert "<U+001B>]0;" in done.stdout and "<U+001B>]52;c;" in done.stdout and "<U+202E>" in done.stdout  # the run: output and message


async def test_a_javascript_url_question_is_declined_with_a_message_and_never_shown(home: Path, tmp_path: Path) -> None:
    _, events, record = await _run_against_hostile(tmp_path, "ask_js_url", {}, policy="full-auto")
    assert [(r["tool"], r["action"]) for r in records(record)] == [("ask_js_url", "decline")]
    assert not [e for e in events if e.msg.type == "elicitation_requested"]  # no front end ever shows it
    warnings = [e.msg.message for e in events if e.msg.type == "warning"]
    assert any("javascript:alert(document.cookie)" in w and "not an https/http link" in w for w in warnings), warnings


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,<script>x</script>", "file:///etc/passwd",
            "vbscript:x", " https://example.com", "https://exa\u202emple.com", "http:/nohost"],
)  # fmt: skip
def test_the_question_form_never_links_a_url_that_is_not_web(url: str) -> None:
    from nbagent.notebook.elicitation import ElicitationForm
    from nbagent.protocol import ElicitationRequested

    form = ElicitationForm(ElicitationRequested(request_id="r", server="evil", mode="url", message="m", url=url), print)
    html = "".join(w.value for w in form.body.children if hasattr(w, "value") and isinstance(w.value, str))
    assert "<a " not in html and "href" not in html


MARKDOWN = (
    "# Result\n\n**bold** <img src=x onerror=alert(1)> and <script>alert(2)</script>\n\n"
    "[bad](javascript:alert(3)) [worse](javascript&#58;alert(4)) [good](https://example.com)\n\n"
    "`<b>code</b>` stays code\n\n```html\n<i>fenced</i>\n```\n"
)


async def test_the_models_markdown_is_shown_without_raw_html_or_script_links(home: Path, tmp_path: Path) -> None:
    from nbagent.notebook.render import WidgetTurn

    view = WidgetTurn(lambda op: None, model_label="replay", scripted=True, thread="t", policy="never")
    model = replay(tmp_path / "script.json", {"text": MARKDOWN})
    async with Session(model=model) as session:
        session.subscribe(view.handle)
        await asyncio.wait_for(session.run("go"), 30)
    for stream in view.streams.values():
        stream.flush()
    (shown,) = [o["data"]["text/markdown"] for s in view.streams.values() for o in s.widget.outputs]
    for raw in ("<img", "<script", "](javascript:", "](javascript&#58;"):
        assert raw not in shown, raw
    assert "&lt;img src=x onerror=alert(1)>" in shown and "**bold**" in shown and "# Result" in shown
    assert "[good](https://example.com)" in shown
    assert "`<b>code</b>`" in shown and "<i>fenced</i>" in shown  # code is shown as written


HOSTILE_MARKDOWN = [
    "<img src=x onerror=alert(1)>",
    "<svg/onload=alert(1)>",
    '<a href="javascript:alert(1)">click</a>',
    "<iframe srcdoc='<script>alert(1)</script>'></iframe>",
    "<details open ontoggle=alert(1)>",
    "<style>body{display:none}</style>",
    "- item <script>alert(1)</script>",
    "> quote <img src=x onerror=alert(1)>",
    "[x](javascript:alert(1))",
    "[x](JAVASCRIPT:alert(1))",
    "[x](jav&#x61;script:alert(1))",
    "[x](javascript&#58;alert(1))",
    "[x](javascript\\:alert(1))",
    "![x](data:text/html;base64,PHNjcmlwdD4=)",
    "[x]\n\n[x]: javascript:alert(1)",
    "`ok` <img src=x onerror=alert(1)> `ok`",
]


@pytest.mark.parametrize("text", HOSTILE_MARKDOWN)
def test_exported_markdown_renders_no_html_from_the_model(text: str) -> None:
    """Rendered by mistune, the Markdown engine of nbconvert's HTML export, which keeps raw HTML."""
    import re

    mistune = pytest.importorskip("mistune")
    from nbagent.notebook.html import markdown_output

    shown = markdown_output(text)["data"]["text/markdown"]
    rendered = mistune.create_markdown(escape=False)(shown)
    assert not re.search(r"<(img|svg|a|iframe|details|style|script)\b", rendered, re.I), rendered
    assert not re.search(r"(href|src)=\"(?!https?:)", rendered, re.I), rendered
