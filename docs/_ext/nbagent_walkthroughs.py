"""The executed walkthroughs as pages, and the widget manager that draws their saved state.

``builder-inited`` copies the executed notebooks (``walkthroughs_source``) into
``walkthroughs/executed/`` (git-ignored), where the walkthroughs page's glob toctree finds them,
giving each widget output of Markdown its HTML (the widget manager has no Markdown parser and
would show the model's replies as source); ``build-finished`` copies ``@jupyter-widgets/html-manager``'s standalone bundle
(``widgets_dist``, from ``npm ci --prefix docs``) to ``_static/widgets/`` so a page needs no CDN.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)
EXECUTED = Path("walkthroughs") / "executed"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"

# The widget manager draws trusted outputs' HTML as it is, scripts included, so what the model
# wrote must not become markup: raw HTML stays text, and only web and mail links become links.
# Images are left as text too: a page must load nothing but the site.
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"]).disable("image")


def render_widget_markdown(notebook: dict[str, Any]) -> int:
    """Add ``text/html`` beside ``text/markdown`` in the saved state's ``Output`` widgets (where
    the agent's replies are); returns how many outputs were rendered. Nothing else changes."""
    state = notebook.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    rendered = 0
    for model in state.values():
        if model.get("model_name") != "OutputModel":
            continue
        for output in model.get("state", {}).get("outputs", []):
            data = output.get("data", {})
            if "text/markdown" in data and "text/html" not in data:
                source = data["text/markdown"]
                data["text/html"] = _MARKDOWN.render("".join(source) if isinstance(source, list) else source)
                rendered += 1
    return rendered


def copy_notebooks(app: Sphinx) -> None:
    source = Path(app.config.walkthroughs_source)
    target = Path(app.srcdir) / EXECUTED
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    notebooks = sorted(source.glob("*.ipynb"))
    if not notebooks:
        logger.warning("no executed walkthroughs in %s: run `python -m nbagent.examples.walkthroughs execute --out %s`",
                       source, source)
    for notebook in notebooks:
        content = json.loads(notebook.read_text(encoding="utf-8"))
        render_widget_markdown(content)
        (target / notebook.name).write_text(json.dumps(content, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def copy_widget_manager(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    dist = Path(app.config.widgets_dist)
    if not (dist / "embed.js").is_file():
        raise ExtensionError(f"{dist / 'embed.js'} is missing: run `npm ci --prefix docs` (the widget manager the pages load)")
    shutil.copytree(dist, Path(app.outdir) / "_static" / "widgets", dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("*.map", "*-amd.js"))


def setup(app: Sphinx) -> dict[str, object]:
    app.add_config_value("walkthroughs_source", "", "env", types=(str,))
    app.add_config_value("widgets_dist", "", "env", types=(str,))
    app.connect("builder-inited", copy_notebooks)
    app.connect("build-finished", copy_widget_manager)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
