"""The sign-in link in the notebook: in the startup status or in the turn that waits for it,
shown as a link the person opens (never opened for them), then "signed in"."""

from __future__ import annotations

from nbagent.notebook.render import WidgetTurn
from nbagent.notebook.startup import StartupView
from nbagent.notebook.text_render import TextTurn
from nbagent.protocol import Event, McpLoginCompleted, McpLoginRequired

LINK = "https://auth.example/authorize?response_type=code&state=abc&code_challenge_method=S256"


def test_a_sign_in_during_a_turn_shows_the_link_in_that_turn_then_signed_in() -> None:
    view = WidgetTurn([].append, model_label="x", scripted=True, thread="t", policy="on-request")
    view.handle(Event(msg=McpLoginRequired(server="linear", url=LINK)))
    assert view.logins is not None and view.logins.widget in view.body.children
    shown = view.logins.lines["linear"].value
    assert 'href="https://auth.example/authorize?response_type=code&amp;state=abc' in shown
    assert 'target="_blank" rel="noopener noreferrer"' in shown and "<script" not in shown
    view.handle(Event(msg=McpLoginCompleted(server="linear")))
    assert "signed in" in view.logins.lines["linear"].value and "href" not in view.logins.lines["linear"].value


def test_a_sign_in_at_startup_shows_under_the_server_status() -> None:
    startup = StartupView(["linear"])
    startup.handle(Event(msg=McpLoginRequired(server="linear", url=LINK)))
    assert startup.logins.widget in startup.widget.children and "linear" in startup.status.value
    assert "href=" in startup.logins.lines["linear"].value


def test_a_text_front_end_prints_the_link() -> None:
    printed: list[str] = []
    turn = TextTurn([].append, model_label="x", scripted=True, thread="t", policy="on-request", out=printed.append)
    turn.handle(Event(msg=McpLoginRequired(server="linear", url=LINK)))
    turn.handle(Event(msg=McpLoginCompleted(server="linear")))
    text = "".join(printed)
    assert LINK in text and "signed in to MCP server linear" in text
