"""Native notebook tools: ``read_notebook``, ``insert_cell``, ``replace_cell``, ``run_cell``.

They go through the same router, events and approval engine as MCP tools: reading is marked
read-only (never asks), writing and running are not (they ask under ``on-request``). Cells
written carry the call's provenance (``metadata.nbagent = {thread_id, turn_id, call_id}``); a
cell is said to be the agent's only when that call is one of the reading thread's, since anyone
can write a cell's metadata.

The tools talk to the JupyterLab extension through a bridge (``nbagent.notebook.bridge``). When
the extension is absent (VS Code, Colab, classic Notebook, headless runs) they degrade, and the
result tells the model exactly what happened:

* the turn is awaited in its cell (``--wait``): new cells go in through IPython's
  ``set_next_input`` and appear below the agent cell when it finishes;
* otherwise the code is shown in the agent cell's output with a note to copy it.

Whether the turn is awaited is the front end's knowledge, not ours: it sets
:attr:`NotebookTools.waiting` (or uses :meth:`NotebookTools.awaited`) around an awaited turn.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nbagent.core.function_tools import argument_errors, own_tool_spec
from nbagent.core.provider import ToolProvider
from nbagent.protocol import CallInfo, PatchChange, TextBlock, ToolAnnotations, ToolResult, ToolSpec
from nbagent.protocol.bridge import (
    BridgeError,
    CellInfo,
    CellType,
    InsertCellParams,
    InsertCellResponse,
    OutputSummary,
    Provenance,
    ReadNotebookParams,
    ReadNotebookResponse,
    ReplaceCellParams,
    ReplaceCellResponse,
    RunCellParams,
    RunCellResponse,
    notebook_threads,
)
from nbagent.protocol.tools import ProgressFn
from nbagent.schema import sanitize_schema
from nbagent.tools.cell_diff import inserted, replaced


class BridgeClient(Protocol):
    """What the tools need of ``nbagent.notebook.bridge.NotebookBridge`` (tests pass a fake)."""

    async def available(self) -> bool: ...
    async def read_notebook(self, params: ReadNotebookParams | None = None) -> ReadNotebookResponse: ...
    async def insert_cell(self, params: InsertCellParams) -> InsertCellResponse: ...
    async def replace_cell(self, params: ReplaceCellParams) -> ReplaceCellResponse: ...
    async def run_cell(self, params: RunCellParams, *, timeout: float | None = None) -> RunCellResponse: ...


# -- arguments ----------------------------------------------------------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadNotebookArgs(_Args):
    include_outputs: bool = Field(True, description="Include a text summary of each code cell's outputs.")
    max_output_chars: int = Field(2000, ge=0, le=100_000, description="Cut each output's text at this length.")


class InsertCellArgs(_Args):
    source: str = Field(description="The new cell's source.")
    cell_type: Literal["code", "markdown"] = Field("code", description="Cell type.")
    index: int | None = Field(None, ge=0, description="Position of the new cell (0 = first). Default: right below the cell that started this turn.")
    after_cell_id: str | None = Field(None, description="Insert right after the cell with this id (wins over index).")


class ReplaceCellArgs(_Args):
    cell_id: str = Field(description="Id of the cell to change (from read_notebook).")
    source: str = Field(description="The cell's new source.")


class RunCellArgs(_Args):
    cell_id: str = Field(description="Id of the cell to run (from read_notebook).")
    timeout_sec: float = Field(300, gt=0, le=3600, description="Give up waiting for the outputs after this long.")


_TOOLS: dict[str, tuple[type[_Args], str, str, ToolAnnotations]] = {
    "read_notebook": (
        ReadNotebookArgs,
        "Read the notebook this kernel runs in: every cell with its id, type, source and a text summary "
        "of its outputs. Use the ids with insert_cell, replace_cell and run_cell.",
        "Read the notebook",
        ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False),
    ),
    "insert_cell": (
        InsertCellArgs,
        "Insert a new code or markdown cell into the notebook (at an index, after a cell id, or by default right "
        "below the cell that started this turn). "
        "The cell is marked as written by the agent. It is not run.",
        "Insert a notebook cell",
        ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
    ),
    "replace_cell": (
        ReplaceCellArgs,
        "Replace the source of an existing notebook cell (by id). The old source is returned.",
        "Replace a notebook cell",
        ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False),
    ),
    "run_cell": (
        RunCellArgs,
        "Run a notebook cell (by id) in the kernel and return its outputs when it finishes.",
        "Run a notebook cell",
        ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=True),
    ),
}


def _spec(name: str) -> ToolSpec:
    args, description, title, annotations = _TOOLS[name]
    parameters, warnings = sanitize_schema(args.model_json_schema())
    return own_tool_spec(
        name, description, parameters, source="native", title=title, annotations=annotations, warnings=warnings
    )


# -- rendering for the model ----------------------------------------------------------------------


def _outputs_text(outputs: Sequence[OutputSummary]) -> str:
    lines = []
    for out in outputs:
        label = out.output_type
        if out.mime_types:
            label += f" ({', '.join(out.mime_types)})"
        text = out.text.rstrip("\n")
        if out.truncated:
            text += " [...cut]"
        lines.append(f"  [{label}] {text}" if text else f"  [{label}]")
    return "\n".join(lines)


def believed(notebook: ReadNotebookResponse, thread_id: str, calls: Collection[str]) -> tuple[ReadNotebookResponse, set[int]]:
    """``notebook`` with each cell's provenance kept only when it names a call of ``thread_id``
    (``calls``: that thread's call ids), and the indexes of the cells whose claim was dropped."""
    unverified = {c.index for c in notebook.cells
                  if c.provenance is not None and not (c.provenance.thread_id == thread_id and c.provenance.call_id in calls)}
    if not unverified:
        return notebook, unverified
    cells = [c.model_copy(update={"provenance": None}) if c.index in unverified else c for c in notebook.cells]
    return notebook.model_copy(update={"cells": cells}), unverified


def render_notebook(notebook: ReadNotebookResponse, note: str = "", unverified: Collection[int] = ()) -> str:
    """The notebook as the model reads it: one header line per cell, then its source.
    ``unverified``: cells whose metadata names an agent call that is not one of this thread's."""
    head = f"Notebook {notebook.path or '(unsaved)'}: {len(notebook.cells)} cell(s)."
    parts = [head + (f" {note}" if note else "")]
    for cell in notebook.cells:
        bits = [f"[{cell.index}] id={cell.id} {cell.cell_type}"]
        if cell.execution_count is not None:
            bits.append(f"execution_count={cell.execution_count}")
        if cell.provenance is not None:
            bits.append(f"written by agent call {cell.provenance.call_id}")
        elif cell.index in unverified:
            bits.append("(its metadata names an agent call that is not a call of this thread: unverified)")
        parts.append(" ".join(bits))
        parts.append(cell.source if cell.source else "(empty)")
        if cell.outputs:
            parts.append("outputs:\n" + _outputs_text(cell.outputs))
    return "\n".join(parts)


def _result(text: str, structured: Any = None, *, is_error: bool = False) -> ToolResult:
    return ToolResult(content=[TextBlock(text=text)], structured=structured, is_error=is_error)


# -- the provider ---------------------------------------------------------------------------------


def _default_display(markdown: str, plain: str) -> None:
    from IPython.display import display

    display({"text/markdown": markdown, "text/plain": plain}, raw=True)


def _fence(source: str, language: str) -> str:
    fence = "```"
    while fence in source:
        fence += "`"
    return f"{fence}{language}\n{source}\n{fence}"


class NotebookTools(ToolProvider):
    """A ``ToolProvider`` of the notebook tools.

    Args:
        bridge: the notebook bridge (the front end passes the kernel's one).
        shell: the IPython shell (for ``set_next_input`` and the notebook's path); defaults to the
            running one.
        display: ``(markdown, plain)`` shows a fallback note in the agent cell's output.
        calls: the call ids of the session's thread (``session.snapshot().call_ids``): a cell is said
            to be written by the agent only when its metadata names one of them. Without it, no
            cell is.

    Attributes:
        waiting: ``True`` while the current turn is awaited in its cell (``%%agent --wait``).
            The front end sets it; without the extension it decides between ``set_next_input``
            (only delivered when the awaiting cell finishes) and showing the code.
    """

    generation = 0
    """The list never changes."""

    def __init__(self, bridge: BridgeClient, *, shell: Any = None,
                 display: Callable[[str, str], None] | None = None,
                 calls: Callable[[], Collection[str]] | None = None) -> None:
        if shell is None:
            try:
                from IPython import get_ipython

                shell = get_ipython()
            except ImportError:  # pragma: no cover
                shell = None
        self.bridge = bridge
        self.shell = shell
        self.display = display or _default_display
        self._calls = calls or (lambda: ())
        self.waiting = False
        self._specs = [_spec(name) for name in _TOOLS]
        self._next_inputs: tuple[object, list[str]] | None = None

    @contextlib.contextmanager
    def awaited(self) -> Iterator[None]:
        """Mark the turn run inside this block as awaited in its cell."""
        previous, self.waiting = self.waiting, True
        try:
            yield
        finally:
            self.waiting = previous

    def list_tools(self) -> Sequence[ToolSpec]:
        return list(self._specs)

    async def call_tool(
        self, spec: ToolSpec, arguments: dict[str, Any], call: CallInfo, on_progress: ProgressFn | None = None
    ) -> ToolResult:
        if spec.name not in _TOOLS:
            return ToolResult.error(f"unknown notebook tool {spec.name!r}")
        try:
            args = _TOOLS[spec.name][0].model_validate(arguments)
        except ValidationError as exc:
            return ToolResult.error(f"{spec.name}: bad arguments: {argument_errors(exc)}")
        try:
            present = await self.bridge.available()
            handler = getattr(self, f"_{spec.name}" if present else f"_{spec.name}_fallback")
            return await handler(args, call)
        except BridgeError as exc:
            return ToolResult.error(f"{spec.name} failed: {exc}")

    async def preview(self, spec: ToolSpec, arguments: dict[str, Any]) -> list[PatchChange]:
        """``replace_cell`` as its cell's source diffed against the notebook now (unsaved edits
        included, through the extension), ``insert_cell`` as the lines it adds."""
        if spec.name not in ("replace_cell", "insert_cell"):
            return []
        try:
            args = _TOOLS[spec.name][0].model_validate(arguments)
        except ValidationError as exc:
            raise ValueError(f"bad arguments: {argument_errors(exc)}") from None
        if isinstance(args, InsertCellArgs):
            return [inserted(args.source, args.cell_type)]
        assert isinstance(args, ReplaceCellArgs)
        notebook = await self.snapshot()
        if notebook is None:
            raise ValueError("the notebook cannot be read here (no extension, no saved file)")
        cell = next((c for c in notebook.cells if c.id == args.cell_id), None)
        if cell is None:
            raise ValueError(f"the notebook has no cell with id {args.cell_id!r}")
        return [replaced(cell, args.source)]

    async def snapshot(self) -> ReadNotebookResponse | None:
        """The notebook as it is now, without outputs' text beyond errors: through the extension
        (unsaved edits included), else its saved file, else ``None`` (nowhere to read it)."""
        params = ReadNotebookParams(include_outputs=True, max_output_chars=200)
        try:
            if await self.bridge.available():
                return await self.bridge.read_notebook(params)
        except BridgeError:
            pass
        path = self._notebook_file()
        return _read_file(path, True, 200) if path is not None else None

    def _told(self, notebook: ReadNotebookResponse, call: CallInfo, note: str = "",
              structured: dict[str, Any] | None = None) -> ToolResult:
        """What the model is told of ``notebook``: provenance only where it is this thread's."""
        notebook, unverified = believed(notebook, call.thread_id, self._calls())
        return _result(render_notebook(notebook, note, unverified), {**(structured or {}), **notebook.model_dump(mode="json")})

    # -- with the extension -------------------------------------------------------------------

    async def _read_notebook(self, args: ReadNotebookArgs, call: CallInfo) -> ToolResult:
        notebook = await self.bridge.read_notebook(
            ReadNotebookParams(include_outputs=args.include_outputs, max_output_chars=args.max_output_chars)
        )
        return self._told(notebook, call)

    async def _insert_cell(self, args: InsertCellArgs, call: CallInfo) -> ToolResult:
        reply = await self.bridge.insert_cell(
            InsertCellParams(source=args.source, cell_type=args.cell_type, index=args.index,
                             after_cell_id=args.after_cell_id, provenance=_provenance(call))
        )
        return _result(
            f"Inserted a {args.cell_type} cell with id {reply.cell_id} at index {reply.index}. It has not been run.",
            {"status": "inserted", **reply.model_dump(mode="json")},
        )

    async def _replace_cell(self, args: ReplaceCellArgs, call: CallInfo) -> ToolResult:
        reply = await self.bridge.replace_cell(
            ReplaceCellParams(cell_id=args.cell_id, source=args.source, provenance=_provenance(call))
        )
        return _result(
            f"Replaced the source of cell {reply.cell_id} (index {reply.index}). Old source:\n{reply.old_source}",
            {"status": "replaced", **reply.model_dump(mode="json")},
        )

    async def _run_cell(self, args: RunCellArgs, call: CallInfo) -> ToolResult:
        # While the turn is awaited in its cell the kernel is busy with that cell, so the run
        # only starts after it: waiting for the outputs here would wait for ourselves.
        wait = not self.waiting
        reply = await self.bridge.run_cell(RunCellParams(cell_id=args.cell_id, wait=wait), timeout=args.timeout_sec)
        if reply.status == "queued":
            text = (f"Cell {reply.cell_id} is queued: it runs after the agent cell finishes (this turn is awaited "
                    "in its cell, so the kernel is busy). Its outputs are not available to this turn; "
                    "use run_python to run code now.")
        else:
            text = f"Ran cell {reply.cell_id}: status {reply.status}, execution_count {reply.execution_count}."
            text += ("\noutputs:\n" + _outputs_text(reply.outputs)) if reply.outputs else "\n(no outputs)"
        return _result(text, reply.model_dump(mode="json"), is_error=reply.status in ("error", "aborted"))

    # -- without the extension ----------------------------------------------------------------

    async def _read_notebook_fallback(self, args: ReadNotebookArgs, call: CallInfo) -> ToolResult:
        path = self._notebook_file()
        if path is None:
            return ToolResult.error(
                "read_notebook: the nbagent JupyterLab extension is not active in this front end and the "
                "notebook's file is not known, so the notebook cannot be read. Ask the user, or use "
                "run_python to inspect variables."
            )
        try:
            notebook = _read_file(path, args.include_outputs, args.max_output_chars)
        except NotebookFileError as exc:
            return ToolResult.error(f"read_notebook: {exc}")
        note = ("(Read from the saved file because the nbagent JupyterLab extension is not active: "
                "unsaved edits are missing, and cells cannot be written or run by id.)")
        return self._told(notebook, call, note, {"status": "read_from_file"})

    async def _insert_cell_fallback(self, args: InsertCellArgs, call: CallInfo) -> ToolResult:
        return self._deliver(args.source, args.cell_type, what="insert a new cell")

    async def _replace_cell_fallback(self, args: ReplaceCellArgs, call: CallInfo) -> ToolResult:
        return self._deliver(args.source, "code", what=f"replace cell {args.cell_id}", replacing=args.cell_id)

    async def _run_cell_fallback(self, args: RunCellArgs, call: CallInfo) -> ToolResult:
        return ToolResult.error(
            "run_cell: not possible here: the nbagent JupyterLab extension is not active in this front end "
            "(VS Code, Colab, classic Notebook or a headless run). Use run_python to run code in the kernel."
        )

    def _deliver(self, source: str, cell_type: str, *, what: str, replacing: str | None = None) -> ToolResult:
        """Without the extension: ``set_next_input`` under ``--wait``, else show the code."""
        header = f"# nbagent: replacement for cell {replacing}\n" if replacing and cell_type == "code" else ""
        if cell_type == "markdown":
            # set_next_input only makes code cells: a %%markdown cell renders the same text.
            text = f"%%markdown\n{source}"
        else:
            text = header + source
        if self.waiting and self.shell is not None and hasattr(self.shell, "set_next_input"):
            count = self._queue_next_input(text)
            more = f" It is combined with {count - 1} earlier insertion(s) of this run into one cell, because " \
                   "a cell can queue only one." if count > 1 else ""
            return _result(
                f"The nbagent JupyterLab extension is not active here, so I could not {what} directly. The code was "
                "queued with IPython's set_next_input: it appears as a new cell below the agent cell when the "
                f"agent cell finishes (the user still has to run it).{more}",
                {"status": "set_next_input", "combined": count},
            )
        language = "markdown" if cell_type == "markdown" else "python"
        verb = f"Replace cell `{replacing}` with" if replacing else "Paste into a new cell"
        markdown = (f"**nbagent could not write to the notebook** (the nbagent JupyterLab extension is not active "
                    f"in this front end). {verb}:\n\n{_fence(source, language)}")
        plain = f"nbagent could not write to the notebook (extension not active). {verb}:\n{source}"
        try:
            self.display(markdown, plain)
        except Exception as exc:
            return ToolResult.error(f"could not {what}: the extension is not active and showing the code failed: {exc!r}")
        return _result(
            f"The nbagent JupyterLab extension is not active here, so I could not {what}. The code is shown in the "
            "agent cell's output with a note asking the user to copy it into the notebook; nothing was written.",
            {"status": "shown"},
        )

    def _queue_next_input(self, text: str) -> int:
        # One set_next_input per execution counts (IPython keeps a single payload per source), so
        # gather this execution's insertions and re-send them all each time.
        key = getattr(self.shell, "execution_count", None)
        if self._next_inputs is None or self._next_inputs[0] != key:
            self._next_inputs = (key, [])
        self._next_inputs[1].append(text)
        self.shell.set_next_input("\n\n".join(self._next_inputs[1]))
        return len(self._next_inputs[1])

    def _notebook_file(self) -> Path | None:
        """The notebook's file when a front end says where it is."""
        candidates = []
        ns = getattr(self.shell, "user_ns", None) or {}
        if isinstance(ns.get("__vsc_ipynb_file__"), str):  # VS Code sets this in the namespace
            candidates.append(ns["__vsc_ipynb_file__"])
        if os.environ.get("JPY_SESSION_NAME"):  # jupyter_server sets it for a notebook's kernel
            candidates.append(os.environ["JPY_SESSION_NAME"])
        for candidate in candidates:
            path = Path(candidate)
            if path.suffix == ".ipynb" and path.is_file():
                return path
        return None


def _provenance(call: CallInfo) -> Provenance:
    return Provenance(thread_id=call.thread_id, turn_id=call.turn_id, call_id=call.call_id)


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


def _read_file(path: Path, include_outputs: bool, max_chars: int) -> ReadNotebookResponse:
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
