"""docs/architecture.md names every module of nbagent in its package's section, so a reader who
opens a file finds its job there, and a module added without a word fails here; and no module
grows past 600 lines."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "nbagent"
DOC = REPO / "docs" / "architecture.md"


def sections(text: str) -> dict[str, str]:
    """``nbagent/pkg/`` -> the text under its ``### `nbagent/pkg/` `` heading (to the next)."""
    parts = re.split(r"^### `(nbagent/[^`]*)`.*$", text, flags=re.MULTILINE)
    return {parts[i].rstrip("/") + "/": parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def modules() -> list[Path]:
    return sorted(
        p.relative_to(REPO) for p in PACKAGE.rglob("*.py")
        if "examples" not in p.parts and "__pycache__" not in p.parts and p.name != "__init__.py"
    )


def test_every_module_is_named_in_its_packages_section() -> None:
    text = DOC.read_text(encoding="utf-8")
    by_package = sections(text)
    unnamed = []
    for module in modules():
        posix = module.as_posix()
        homes = [pkg for pkg in by_package if posix.startswith(pkg)]
        if not homes:  # a top-level module, or a package with no section of its own
            if f"`{posix}`" not in text and f"`{module.name}`" not in text:
                unnamed.append(posix)
            continue
        home = max(homes, key=len)
        inside = posix[len(home):]
        if f"`{inside}`" not in by_package[home]:
            unnamed.append(f"{posix} (not in the section for {home})")
    assert not unnamed, "docs/architecture.md does not name these modules:\n" + "\n".join(unnamed)


MAX_LINES = 600


def test_no_module_is_over_600_lines() -> None:
    """Modules by job: one that grows past this is doing several; split it and name each part
    above. ``examples/`` is exempt: its servers are teaching material, one file each."""
    long = {m.as_posix(): n for m in modules() if (n := len((REPO / m).read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"
