"""What is on the other end of the kernel: a widget front end, a text one, or nobody.

- ``widgets``: a notebook UI (JupyterLab, Notebook 7, VS Code) sends ``cellId`` with each
  ``execute_request``; it renders widgets and people click.
- ``text``: a plain IPython terminal (no kernel), where widgets cannot render.
- ``headless``: a kernel driven without a UI (nbclient, papermill, plain jupyter_client):
  no clicks and no late output, so turns must be awaited and never wait for a human.

``$NBAGENT_FRONTEND`` (widgets | text | headless) overrides the guess.
"""

from __future__ import annotations

import os
from typing import Any, Literal

Frontend = Literal["widgets", "text", "headless"]
KINDS: tuple[Frontend, ...] = ("widgets", "text", "headless")


def detect(shell: Any) -> Frontend:
    forced = os.environ.get("NBAGENT_FRONTEND", "").strip().lower()
    for kind in KINDS:
        if forced == kind:
            return kind
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return "text"
    try:
        parent = kernel.get_parent()
    except Exception:
        parent = getattr(kernel, "_parent_header", None) or {}
    metadata = (parent or {}).get("metadata") or {}
    return "widgets" if metadata.get("cellId") else "headless"
