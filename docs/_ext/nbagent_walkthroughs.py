"""The executed walkthroughs as pages, and the widget manager that draws their saved state.

``builder-inited`` copies the executed notebooks (``walkthroughs_source``) into
``walkthroughs/executed/`` (git-ignored), where the walkthroughs page's glob toctree finds them;
``build-finished`` copies ``@jupyter-widgets/html-manager``'s standalone bundle
(``widgets_dist``, from ``npm ci --prefix docs``) to ``_static/widgets/`` so a page needs no CDN.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging

logger = logging.getLogger(__name__)
EXECUTED = Path("walkthroughs") / "executed"


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
        shutil.copy2(notebook, target / notebook.name)


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
