"""docs/guide/codex-vocabulary.md cites Codex's source by line: a link to a branch, or to a whole
file, goes stale as Codex moves, so every Codex link must pin a full commit and a line range."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "codex-vocabulary.md"
CODEX_LINK = re.compile(r"https://github\.com/openai/codex/[^\s)>\]]*")
PINNED = re.compile(r"https://github\.com/openai/codex/blob/[0-9a-f]{40}/codex-rs/[\w./-]+#L(\d+)-L(\d+)")
COMMIT_ONLY = re.compile(r"https://github\.com/openai/codex/tree/[0-9a-f]{40}")


def test_every_codex_link_pins_a_commit_and_a_line_range() -> None:
    links = CODEX_LINK.findall(PAGE.read_text(encoding="utf-8"))
    line_links = [link for link in links if not COMMIT_ONLY.fullmatch(link)]
    assert len(line_links) >= 8, "the page cites Codex's anchor files by line"
    bad = []
    for link in line_links:
        pinned = PINNED.fullmatch(link)
        if pinned is None or not 0 < int(pinned[1]) <= int(pinned[2]):
            bad.append(link)
    assert not bad, f"Codex links without a 40-hex commit and an ascending #La-Lb range: {bad}"
