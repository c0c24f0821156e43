"""A URL a server asks the person to open (``elicitation/create`` in URL mode) names its host apart
from the link, and warns when the address may not be what it reads as: punycode, letters of
another alphabet or of two at once, a user name before ``@``, a bare IP address. The MCP spec asks
clients to show the target domain clearly and to warn on suspicious URLs; every front end that
shows such a question does: the notebook's form, the text front end and ``nbagent mcp-server``
forwarding the question to its own client."""

from __future__ import annotations

import pytest

from nbagent.notebook.elicitation import ElicitationForm
from nbagent.notebook.text_render import TextTurn
from nbagent.protocol import ElicitationRequested, Event
from nbagent.server.asks import Ask, elicit_params

# url, the host shown, what a warning must say (None: no warning)
URLS = [
    ("https://github.com/login/device", "github.com", None),
    ("https://github.com@evil.example/login", "evil.example", "github.com"),
    ("https://user:pw@evil.example/", "evil.example", "user name"),
    ("https://xn--80ak6aa92e.com/", "xn--80ak6aa92e.com", "аррӏе.com"),
    ("https://аррӏе.com/", "xn--80ak6aa92e.com", "аррӏе.com"),
    ("https://gіthub.com/login", "xn--gthub-n2e.com", "Cyrillic and Latin"),
    ("http://192.168.1.20:8080/pay", "192.168.1.20", "IP address"),
    ("http://[::1]/pay", "::1", "IP address"),
    ("http://2130706433/pay", "2130706433", "IP address"),
    ("http://0x7f.1/pay", "0x7f.1", "IP address"),
]


def _form(url: str) -> str:
    form = ElicitationForm(ElicitationRequested(request_id="r", server="srv", mode="url", message="Sign in", url=url), print)
    return "".join(w.value for w in form.body.children if isinstance(getattr(w, "value", None), str))


def _text(url: str) -> str:
    printed: list[str] = []
    turn = TextTurn(lambda op: None, model_label="m", scripted=True, thread="t", policy="on-request", out=printed.append)
    turn.handle(Event(msg=ElicitationRequested(request_id="r", server="srv", mode="url", message="Sign in", url=url)))
    return "".join(printed)


def _forwarded(url: str) -> str:
    event = ElicitationRequested(request_id="r", server="srv", mode="url", message="Sign in", url=url)
    params = elicit_params(Ask("elicitation", "r", event), url_ok=True)
    assert params is not None and params.url == url  # the client still gets the URL itself, untouched
    return params.message


@pytest.mark.parametrize("shown_by", [_form, _text, _forwarded], ids=["notebook", "text", "mcp-server"])
@pytest.mark.parametrize(("url", "host", "warning"), URLS)
def test_a_url_question_names_its_host_and_warns_when_it_may_mislead(shown_by, url: str, host: str, warning: str | None) -> None:
    shown = shown_by(url)
    assert f"opens {host}" in shown or f"opens <b>{host}</b>" in shown, shown
    if warning is None:
        assert "⚠" not in shown, shown
    else:
        assert "⚠" in shown and warning in shown, shown
