"""Notebooks defined as code: a list of ``(kind, source)`` cells becomes an ``nbformat`` notebook.

The quickstart and the walkthroughs are written this way so that they ship inside the package
(``nbagent demo`` runs from an installed wheel) and read as plain text in a diff, while the
repository keeps the ``.ipynb`` written from them in ``notebooks/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import nbformat

CellKind = Literal["markdown", "code"]


def build_notebook(cells: Sequence[tuple[CellKind, str]], id_prefix: str) -> nbformat.NotebookNode:
    """A Python 3 notebook of ``cells``, with stable cell ids ``{id_prefix}-NN`` (so a rewrite of
    the same cells is byte-identical)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for kind, source in cells:
        cell = nbformat.v4.new_markdown_cell(source) if kind == "markdown" else nbformat.v4.new_code_cell(source)
        cell.id = f"{id_prefix}-{len(nb.cells):02d}"
        nb.cells.append(cell)
    return nb
