"""The nbagent docs site: Sphinx + MyST-NB + the PyData theme, built offline.

The walkthrough pages are the notebooks ``python -m nbagent.examples.walkthroughs execute`` ran
(``$NBAGENT_WALKTHROUGHS``, default ``build/walkthroughs``), copied in and rendered as they ran:
MyST-NB never executes them, and their saved widget state is drawn by the widget manager served
from this site's own ``_static`` (no CDN: nothing is fetched at build or view time).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
sys.path[:0] = [str(DOCS / "_ext"), str(REPO)]

from nbagent import __version__  # noqa: E402

project = "nbagent"
author = "nbagent contributors"
copyright = "nbagent contributors"
release = version = __version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "nbagent_reference",
    "nbagent_walkthroughs",
]

exclude_patterns = ["_build", "node_modules", "package.json", "package-lock.json", "**.ipynb_checkpoints"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# Render exactly what ran: never execute, and draw the widgets from their saved state.
nb_execution_mode = "off"
nb_ipywidgets_js = {"widgets/embed.js": {}}
widgets_dist = str(DOCS / "node_modules" / "@jupyter-widgets" / "html-manager" / "dist")
walkthroughs_source = os.environ.get("NBAGENT_WALKTHROUGHS", str(REPO / "build" / "walkthroughs"))

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": False}

html_theme = "pydata_sphinx_theme"
html_title = f"nbagent {release}"
html_static_path = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"index": []}
