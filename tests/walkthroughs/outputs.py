"""A notebook's outputs with what differs from run to run taken out, so a committed notebook can be
compared with a fresh run of it: ids, ports, durations, token counts, temporary folders and the
folders of the machine it ran on (recorded in the notebook by ``make walkthroughs``).

What is kept is what a reader sees: each code cell's printed text, its rich outputs as text, its
errors. Stream output is joined per stream (how a kernel splits it into messages varies)."""

from __future__ import annotations

import re
from collections.abc import Iterable

import nbformat

VOLATILE: list[tuple[re.Pattern[str], str]] = [
    # a word a fixed-width cut ends in: where the cut falls in a random id decides what is left
    (re.compile(r"\w+…"), "…"),
    # ids the runtime or a server makes at random: thread_..., call_..., chatcmpl-..., uuids
    (re.compile(r"\b([A-Za-z]+)([_-])[0-9a-f]{8,}\b"), r"\1\2<id>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"\b(127\.0\.0\.1|localhost|\[::1\]):\d+"), r"\1:<port>"),
    (re.compile(r"\b\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "<when>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds?)\b"), "<time>"),
    (re.compile(r"\bpid[ =:]*\d+", re.IGNORECASE), "pid <pid>"),
    # token counts follow the length of what was sent, which holds the folder it ran in
    (re.compile(r"\d[\d,]*(?=\s(?:tokens?|in\b|out\b|cached\b|in the thread))"), "<n>"),
    (re.compile(r"/tmp/[\w.-]*tmp[\w.-]*|/tmp/nbagent-[\w.-]+"), "<tmp>"),
    (re.compile(r"<venv>/bin/python[\d.]*"), "<venv>/bin/python"),  # the kernel's, as it was started
    (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,}\b"), "<hex>"),  # short ids, hashes
    # every other number: sizes, counts and offsets follow the folder's path and the timings
    (re.compile(r"\d+"), "N"),
    (re.compile(r"[ \t]+"), " "),  # columns padded to a number's width
]
CUT = 80
"""A line this long may be one a cell cut at a fixed width: where the cut falls moves with the
length of what precedes it (a timestamp, a path), so such a line matches a longer one it begins."""


def normalise(text: str, places: Iterable[tuple[str, str]] = ()) -> str:
    """``text`` with each place (a path, longest first) named by its label, then ``VOLATILE``."""
    for path, label in sorted(places, key=lambda p: -len(p[0])):
        if path:
            text = text.replace(path, label)
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def matches(before: list[str], after: list[str]) -> bool:
    """Whether two cells' ``seen`` outputs are the same run's, line by line (see ``CUT``)."""
    was, now = "\n".join(before).splitlines(), "\n".join(after).splitlines()
    return len(was) == len(now) and all(
        a == b or (min(len(a), len(b)) >= CUT and (a.startswith(b) or b.startswith(a))) for a, b in zip(was, now, strict=True)
    )


def _rich(output: nbformat.NotebookNode) -> str:
    data = output.get("data", {})
    for kind in ("text/markdown", "text/plain"):
        if kind in data:
            return f"[{kind}] {data[kind]}"
    return f"[{', '.join(sorted(data))}]"


def seen(cell: nbformat.NotebookNode, places: Iterable[tuple[str, str]] = ()) -> list[str]:
    """What a reader sees of one code cell's outputs, normalised."""
    streams: dict[str, str] = {}
    rest: list[str] = []
    for output in cell.get("outputs", []):
        kind = output["output_type"]
        if kind == "stream":
            streams[output["name"]] = streams.get(output["name"], "") + output["text"]
        elif kind == "error":
            rest.append(f"[error] {output['ename']}: {output['evalue']}")
        else:
            rest.append(_rich(output))
    places = list(places)
    return [normalise(f"[{name}] {text}", places) for name, text in sorted(streams.items())] + [
        normalise(text, places) for text in rest
    ]
