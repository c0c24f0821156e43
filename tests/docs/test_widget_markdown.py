"""The docs pages draw the agent's replies (Markdown in ``Output`` widgets) as formatted text:
the site's widget manager has no Markdown parser, so the build adds the HTML beside it. That HTML
is drawn as trusted, scripts included, so a reply must never become markup of its own."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "_ext"))

from nbagent_walkthroughs import WIDGET_STATE, render_widget_markdown  # noqa: E402


def _notebook(*outputs: dict, model: str = "OutputModel") -> dict:
    state = {"m1": {"model_name": model, "state": {"outputs": list(outputs)}}}
    return {"metadata": {"widgets": {WIDGET_STATE: {"state": state}}}}


def _reply(markdown: str | list[str]) -> dict:
    return {"output_type": "display_data", "data": {"text/markdown": markdown, "text/plain": "x"}, "metadata": {}}


def _html(notebook: dict) -> str:
    return notebook["metadata"]["widgets"][WIDGET_STATE]["state"]["m1"]["state"]["outputs"][0]["data"]["text/html"]


def test_a_reply_becomes_formatted_text_and_keeps_its_markdown():
    nb = _notebook(_reply(["The note `hello` was **written**.\n", "\n| a | b |\n|---|---|\n| 1 | 2 |\n"]))
    assert render_widget_markdown(nb) == 1
    html = _html(nb)
    assert "<code>hello</code>" in html and "<strong>written</strong>" in html and "<td>1</td>" in html
    assert nb["metadata"]["widgets"][WIDGET_STATE]["state"]["m1"]["state"]["outputs"][0]["data"]["text/markdown"]


def test_hostile_markdown_stays_text():
    hostile = (
        "<script>alert(1)</script> <img src=x onerror=alert(2)> <iframe src=https://evil.example></iframe>\n\n"
        "[click](javascript:alert(3)) [data](data:text/html,<script>alert(4)</script>) "
        "[v](vbscript:msgbox) ![pixel](https://tracker.example/p.png) [fine](https://example.org/a)"
    )
    nb = _notebook(_reply(hostile))
    render_widget_markdown(nb)
    html = _html(nb).lower()
    for markup in ("<script", "<img", "<iframe", 'href="javascript:', 'href="data:', 'href="vbscript:'):
        assert markup not in html, markup
    assert "&lt;script&gt;" in html and "&lt;img src=x" in html
    assert '<a href="https://example.org/a">fine</a>' in html


def test_other_outputs_and_widgets_are_left_alone():
    own = {"output_type": "display_data", "data": {"text/markdown": "**a**", "text/html": "<b>mine</b>"}, "metadata": {}}
    stream = {"output_type": "stream", "name": "stdout", "text": "**b**"}
    nb = _notebook(own, stream)
    assert render_widget_markdown(nb) == 0
    assert own["data"]["text/html"] == "<b>mine</b>" and "data" not in stream
    assert render_widget_markdown(_notebook(_reply("**c**"), model="HTMLModel")) == 0
    assert render_widget_markdown({"metadata": {}}) == 0
