"""A notebook read from its saved file, for the notebook tools where the extension is absent
(and for the context at a turn's start): validated, size-bounded, reduced to what the model reads."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from nbagent.protocol.bridge import (
    CellInfo,
    CellType,
    OutputSummary,
    Provenance,
    ReadNotebookResponse,
    notebook_threads,
)

MAX_NOTEBOOK_BYTES = 50_000_000
"""The largest notebook file read from disk (``read_notebook`` without the extension, the
context at a turn's start): it is parsed whole, for a summary of a few thousand characters."""


class NotebookFileError(ValueError):
    """A notebook file that cannot be read; the message names the file and why."""


class _FileOutput(BaseModel):
    """One output as nbformat writes it; only what a summary shows is read."""

    output_type: str = ""
    text: str | list[str] = ""
    ename: str = ""
    evalue: str = ""
    data: dict[str, Any] = Field(default_factory=dict)


_CELL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""nbformat's cell id: another id (spaces, a new line) could pass for more of the line it heads."""


class _FileCell(BaseModel):
    id: str | None = None
    cell_type: CellType = "code"
    source: str | list[str] = ""
    execution_count: int | None = None
    outputs: list[_FileOutput] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class _FileNotebook(BaseModel):
    """The parts of an ``.ipynb`` the tools read, validated: the file is whoever sent it's."""

    cells: list[_FileCell] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


def _load_file(path: Path) -> _FileNotebook:
    """Read at most ``MAX_NOTEBOOK_BYTES`` of ``path`` and validate it as a notebook."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            data = f.read(MAX_NOTEBOOK_BYTES + 1) if size <= MAX_NOTEBOOK_BYTES else b""
    except OSError as exc:
        raise NotebookFileError(f"could not read {path}: {exc.strerror or exc}") from None
    if size > MAX_NOTEBOOK_BYTES or len(data) > MAX_NOTEBOOK_BYTES:
        raise NotebookFileError(
            f"{path} is {max(size, len(data)):,} bytes, over the {MAX_NOTEBOOK_BYTES:,} bytes a notebook is read up to "
            "from its file; ask the user to clear large outputs, or use run_python to read what you need"
        )
    try:
        return _FileNotebook.model_validate_json(data)
    except ValidationError as exc:
        errors = exc.errors()
        where = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'the file'}: {e['msg']}" for e in errors[:3])
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        raise NotebookFileError(f"{path} is not a notebook that can be read: {where}{more}") from None


def _provenance_of(cell: _FileCell) -> Provenance | None:
    meta = cell.metadata.get("nbagent")
    if isinstance(meta, dict) and isinstance(meta.get("call_id"), str) and meta["call_id"]:
        return Provenance(thread_id=str(meta.get("thread_id", "")), turn_id=str(meta.get("turn_id", "")),
                          call_id=meta["call_id"])
    return None


def read_notebook_file(path: Path, include_outputs: bool, max_chars: int) -> ReadNotebookResponse:
    """Raises ``NotebookFileError``."""
    notebook = _load_file(path)
    cells = [
        CellInfo(id=cell.id if cell.id and _CELL_ID.fullmatch(cell.id) else f"cell-{index}", index=index, cell_type=cell.cell_type, source=_joined(cell.source),
                 execution_count=cell.execution_count, provenance=_provenance_of(cell),
                 outputs=[_summarize_output(out, max_chars) for out in cell.outputs] if include_outputs else [])
        for index, cell in enumerate(notebook.cells)
    ]
    meta = notebook.metadata.get("nbagent")
    return ReadNotebookResponse(path=str(path), cells=cells, threads=notebook_threads(meta.get("threads") if isinstance(meta, dict) else None))


def _joined(value: object) -> str:
    """nbformat's multiline string (a string or a list of them); anything else is no text."""
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def _summarize_output(out: _FileOutput, max_chars: int) -> OutputSummary:
    mime_types: list[str] = []
    if out.output_type == "stream":
        text = _joined(out.text)
    elif out.output_type == "error":
        text = f"{out.ename}: {out.evalue}"
    else:
        mime_types = list(out.data)
        text = _joined(out.data.get("text/plain"))
    return OutputSummary(output_type=out.output_type, text=text[:max_chars], mime_types=mime_types,
                         truncated=len(text) > max_chars)
