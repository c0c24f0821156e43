"""Codex's patch format, read as Codex reads it (``codex-rs/apply-patch/src/parser.rs``)::

    *** Begin Patch
    *** Add File: PATH            then the file's lines, each prefixed "+"
    *** Delete File: PATH
    *** Update File: PATH
    *** Move to: NEW_PATH         (optional, right after Update File)
    @@ optional context line      each hunk; the first may leave out its "@@"
     context / -removed / +added  lines, each prefixed " ", "-" or "+"
    *** End of File               (optional: the hunk's lines end the file)
    *** End Patch

As lenient as Codex: markers may carry spaces around them, blank lines between hunks are
skipped, an empty line inside a hunk is an empty context line, and a patch wrapped in a shell
heredoc (``<<'EOF'`` ... ``EOF``, as a model may send it) is read without the wrapper.
"""

from __future__ import annotations

from dataclasses import dataclass

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File: "
DELETE = "*** Delete File: "
UPDATE = "*** Update File: "
MOVE = "*** Move to: "
END_OF_FILE = "*** End of File"
CONTEXT = "@@ "
EMPTY_CONTEXT = "@@"
_HEREDOCS = ("<<EOF", "<<'EOF'", '<<"EOF"')
_NO_LINES = "Update hunk does not contain any lines"


class PatchError(ValueError):
    """A patch that cannot be read or applied; the message says what to send instead."""


@dataclass(frozen=True)
class Chunk:
    """One hunk of an update: ``old`` lines found after ``context`` are replaced by ``new``."""

    context: str | None
    """The ``@@`` line's text (a class or function header) the hunk's lines come after."""
    old: tuple[str, ...]
    new: tuple[str, ...]
    end_of_file: bool = False
    """The ``old`` lines must end the file."""
    line: int = 0
    """Where the hunk starts in the patch (1-based), for error messages."""


@dataclass(frozen=True)
class AddFile:
    path: str
    contents: str


@dataclass(frozen=True)
class DeleteFile:
    path: str


@dataclass(frozen=True)
class UpdateFile:
    path: str
    move_to: str | None
    chunks: tuple[Chunk, ...]


Hunk = AddFile | DeleteFile | UpdateFile


def _invalid_hunk(line: int, message: str) -> PatchError:
    return PatchError(f"invalid hunk at line {line}, {message}")


def _boundaries(lines: list[str]) -> list[str]:
    """The lines between the begin and end markers, or why there are none."""
    if lines and lines[0].strip() == BEGIN and lines[-1].strip() == END and len(lines) >= 2:
        return lines[1:-1]
    if lines and lines[0] in _HEREDOCS and lines[-1].endswith("EOF") and len(lines) >= 4:
        return _boundaries(lines[1:-1])
    if not lines or lines[0].strip() != BEGIN:
        raise PatchError("invalid patch: The first line of the patch must be '*** Begin Patch'")
    raise PatchError("invalid patch: The last line of the patch must be '*** End Patch'")


def parse_patch(text: str) -> list[Hunk]:
    """The file operations of ``text`` in order; :class:`PatchError` names the line that is wrong."""
    lines = [line.removesuffix("\r") for line in text.strip().split("\n")]  # as Rust's lines()
    body = _boundaries(lines)
    hunks: list[Hunk] = []
    at, number = 0, 2
    while at < len(body):
        hunk, used = _one_hunk(body[at:], number)
        hunks.append(hunk)
        at += used
        number += used
    return hunks


def _one_hunk(lines: list[str], number: int) -> tuple[Hunk, int]:
    first = lines[0].strip()
    if first.startswith(ADD):
        added = 0
        for line in lines[1:]:
            if not line.startswith("+"):
                break
            added += 1
        contents = "".join(line[1:] + "\n" for line in lines[1 : 1 + added])
        return AddFile(first[len(ADD) :], contents), 1 + added
    if first.startswith(DELETE):
        return DeleteFile(first[len(DELETE) :]), 1
    if first.startswith(UPDATE):
        return _update(first[len(UPDATE) :], lines, number)
    raise _invalid_hunk(
        number,
        f"'{first}' is not a valid hunk header. Valid hunk headers: '*** Add File: {{path}}', "
        "'*** Delete File: {path}', '*** Update File: {path}'",
    )


def _update(path: str, lines: list[str], number: int) -> tuple[UpdateFile, int]:
    used = 1
    move_to = None
    if len(lines) > 1 and lines[1].startswith(MOVE):
        move_to = lines[1][len(MOVE) :]
        used += 1
    chunks: list[Chunk] = []
    while used < len(lines):
        line = lines[used]
        if not line.strip():  # blank lines between hunks
            used += 1
            continue
        if line.startswith("*"):
            break
        chunk, taken = _chunk(lines[used:], number + used, first=not chunks)
        chunks.append(chunk)
        used += taken
    if not chunks:
        raise _invalid_hunk(number, f"Update file hunk for path '{path}' is empty")
    return UpdateFile(path, move_to, tuple(chunks)), used


def _chunk(lines: list[str], number: int, *, first: bool) -> tuple[Chunk, int]:
    if lines[0] == EMPTY_CONTEXT:
        context, start = None, 1
    elif lines[0].startswith(CONTEXT):
        context, start = lines[0][len(CONTEXT) :], 1
    elif first:
        context, start = None, 0
    else:
        raise _invalid_hunk(number, f"Expected update hunk to start with a @@ context marker, got: '{lines[0]}'")
    if start >= len(lines):
        raise _invalid_hunk(number + 1, _NO_LINES)
    old: list[str] = []
    new: list[str] = []
    end_of_file = False
    taken = 0
    for line in lines[start:]:
        if line == END_OF_FILE:
            if not taken:
                raise _invalid_hunk(number + 1, _NO_LINES)
            end_of_file = True
            taken += 1
            break
        mark, rest = line[:1], line[1:]
        if mark == "":  # an empty line is an empty context line
            old.append("")
            new.append("")
        elif mark == " ":
            old.append(rest)
            new.append(rest)
        elif mark == "+":
            new.append(rest)
        elif mark == "-":
            old.append(rest)
        elif not taken:
            raise _invalid_hunk(
                number + 1,
                f"Unexpected line found in update hunk: '{line}'. Every line should start with "
                "' ' (context line), '+' (added line), or '-' (removed line)",
            )
        else:
            break  # the next hunk's header
        taken += 1
    return Chunk(context, tuple(old), tuple(new), end_of_file, number), taken + start
