"""Native notebook tools: ``read_notebook``, ``insert_cell``, ``replace_cell``, ``delete_cell``,
``move_cell``, ``run_cell``.

They go through the same router, events and approval engine as MCP tools: reading is marked
read-only (never asks), writing and running are not (they ask under ``on-request``). Cells
written carry the call's provenance (``metadata.nbagent = {thread_id, turn_id, call_id}``); a
cell is said to be the agent's only when that call is one of the reading thread's, since anyone
can write a cell's metadata. What an undo needs to put a cell back as it was (a replaced cell's
provenance before, a deleted one's metadata and outputs) goes into the result's ``undo``, which
only the rollout keeps (``nbagent.checkpoint.outputs``).

Nothing the person typed is lost: the tools remember each cell's source as the model last read
it (or, for a cell it never read, as its approval panel showed it), and a change to that cell is
sent with it as ``expected_source``. The extension writes only if the live cell still holds
exactly that, in the same step as the write; otherwise nothing changes and the model gets an
error naming the cell, saying the person changed it, with its source now. Codex checks an edit
against the file the same way (a patch's context lines must match); here the version is kept by
the kernel, never taken from the model's arguments, so a model cannot claim a version it did not
read.

The tools talk to the JupyterLab extension through a bridge (``nbagent.notebook.bridge``). When
the extension is absent (VS Code, Colab, classic Notebook, headless runs) they degrade, and the
result tells the model exactly what happened:

* the turn is awaited in its cell (``--wait``): new cells go in through IPython's
  ``set_next_input`` and appear below the agent cell when it finishes;
* otherwise the code is shown in the agent cell's output with a note to copy it.

Where the extension is active but no page of the notebook answers now (its tab was closed), a
write is refused saying just that, and naming the saved file; nothing is shown or queued, since
no page would show it.

Whether the turn is awaited is the front end's knowledge, not ours: it sets
:attr:`NotebookTools.waiting` (or uses :meth:`NotebookTools.awaited`) around an awaited turn.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nbagent.checkpoint import outputs as kept_outputs
from nbagent.core.function_tools import argument_errors, own_tool_spec
from nbagent.core.provider import ToolProvider
from nbagent.protocol import CallInfo, PatchChange, TextBlock, ToolAnnotations, ToolResult, ToolSpec
from nbagent.protocol.bridge import (
    BridgeError,
    DeleteCellParams,
    DeleteCellResponse,
    InsertCellParams,
    InsertCellResponse,
    MoveCellParams,
    MoveCellResponse,
    OutputSummary,
    Provenance,
    ReadNotebookParams,
    ReadNotebookResponse,
    ReplaceCellParams,
    ReplaceCellResponse,
    RunCellParams,
    RunCellResponse,
)
from nbagent.protocol.tools import ProgressFn
from nbagent.schema import sanitize_schema
from nbagent.tools.cell_diff import deleted, inserted, moved, replaced
from nbagent.tools.notebook_file import MAX_NOTEBOOK_BYTES as MAX_NOTEBOOK_BYTES
from nbagent.tools.notebook_file import NotebookFileError, read_notebook_file


class BridgeClient(Protocol):
    """What the tools need of ``nbagent.notebook.bridge.NotebookBridge`` (tests pass a fake)."""

    async def available(self) -> bool: ...
    def page_gone(self) -> float | None: ...
    async def read_notebook(self, params: ReadNotebookParams | None = None) -> ReadNotebookResponse: ...
    async def insert_cell(self, params: InsertCellParams) -> InsertCellResponse: ...
    async def replace_cell(self, params: ReplaceCellParams) -> ReplaceCellResponse: ...
    async def delete_cell(self, params: DeleteCellParams) -> DeleteCellResponse: ...
    async def move_cell(self, params: MoveCellParams) -> MoveCellResponse: ...
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


class DeleteCellArgs(_Args):
    cell_id: str = Field(description="Id of the cell to delete (from read_notebook).")


class MoveCellArgs(_Args):
    cell_id: str = Field(description="Id of the cell to move (from read_notebook).")
    to_index: int = Field(ge=0, description="The cell's position after the move (0 = first).")


class RunCellArgs(_Args):
    cell_id: str = Field(description="Id of the cell to run (from read_notebook).")
    timeout_sec: float = Field(300, gt=0, le=3600, description="Give up waiting for the outputs after this long.")


_TOOLS: dict[str, tuple[type[_Args], str, str, ToolAnnotations]] = {
    "read_notebook": (
        ReadNotebookArgs,
        "Read the notebook this kernel runs in: every cell with its id, type, source and a text summary "
        "of its outputs. Use the ids with insert_cell, replace_cell, delete_cell, move_cell and run_cell.",
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
        "Replace the source of an existing notebook cell (by id). The old source is returned. "
        "If the person changed the cell after you last read it, nothing is written and the error gives its "
        "source now: build on their edit.",
        "Replace a notebook cell",
        ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False),
    ),
    "delete_cell": (
        DeleteCellArgs,
        "Delete a notebook cell (by id), with its outputs. Its source is returned. "
        "If the person changed the cell after you last read it, nothing is deleted.",
        "Delete a notebook cell",
        ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False),
    ),
    "move_cell": (
        MoveCellArgs,
        "Move a notebook cell (by id) to another position; its source and outputs go with it. "
        "If the person changed the cell after you last read it, it is not moved.",
        "Move a notebook cell",
        ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
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
        self._versions: dict[str, str] = {}
        """Cell id -> the source a change to that cell is conditional on (see the module doc)."""
        self._kept: tuple[str, int] = ("", 0)
        """The turn whose deleted cells' outputs were last kept for undo, and their characters."""

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
            if not present and spec.name != "read_notebook" and self.bridge.page_gone() is not None:
                return self._no_page(spec.name)
            handler = getattr(self, f"_{spec.name}" if present else f"_{spec.name}_fallback")
            return await handler(args, call)
        except CellChanged as exc:
            return ToolResult.error(str(exc))
        except BridgeError as exc:
            return ToolResult.error(f"{spec.name} failed: {exc}")

    async def preview(self, spec: ToolSpec, arguments: dict[str, Any]) -> list[PatchChange]:
        """``replace_cell`` as its cell's source diffed against the notebook now (unsaved edits
        included, through the extension), ``delete_cell`` as every line removed, ``move_cell`` as
        its positions, ``insert_cell`` as the lines it adds. A cell the model never read is from
        now on expected to hold what the panel shows, so typing into it before the decision is
        not overwritten either."""
        if spec.name not in ("replace_cell", "insert_cell", "delete_cell", "move_cell"):
            return []
        try:
            args = _TOOLS[spec.name][0].model_validate(arguments)
        except ValidationError as exc:
            raise ValueError(f"bad arguments: {argument_errors(exc)}") from None
        if isinstance(args, InsertCellArgs):
            return [inserted(args.source, args.cell_type)]
        assert isinstance(args, (ReplaceCellArgs, DeleteCellArgs, MoveCellArgs))
        notebook = await self.snapshot()
        if notebook is None:
            raise ValueError("the notebook cannot be read here (no extension, no saved file)")
        cell = next((c for c in notebook.cells if c.id == args.cell_id), None)
        if cell is None:
            raise ValueError(f"the notebook has no cell with id {args.cell_id!r}")
        expected = self._versions.setdefault(cell.id, cell.source)
        note = ("the person changed this cell after the agent last read it: the change will be refused"
                if expected != cell.source else "")
        if isinstance(args, ReplaceCellArgs):
            change = replaced(cell, args.source)
        elif isinstance(args, DeleteCellArgs):
            change = deleted(cell)
        else:
            change = moved(cell, args.to_index, len(notebook.cells))
        return [change.model_copy(update={"note": "; ".join(n for n in (note, change.note) if n)})]

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
        return read_notebook_file(path, True, 200) if path is not None else None

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
        self._versions.update((cell.id, cell.source) for cell in notebook.cells)
        return self._told(notebook, call)

    async def _insert_cell(self, args: InsertCellArgs, call: CallInfo) -> ToolResult:
        reply = await self.bridge.insert_cell(
            InsertCellParams(source=args.source, cell_type=args.cell_type, index=args.index,
                             after_cell_id=args.after_cell_id, provenance=_provenance(call))
        )
        self._versions[reply.cell_id] = args.source
        return _result(
            f"Inserted a {args.cell_type} cell with id {reply.cell_id} at index {reply.index}. It has not been run.",
            {"status": "inserted", **reply.model_dump(mode="json")},
        )

    async def _replace_cell(self, args: ReplaceCellArgs, call: CallInfo) -> ToolResult:
        async with self._unless_changed("replace_cell", args.cell_id) as expected:
            reply = await self.bridge.replace_cell(ReplaceCellParams(
                cell_id=args.cell_id, source=args.source, provenance=_provenance(call), expected_source=expected))
        self._versions[args.cell_id] = args.source
        return ToolResult(
            content=[TextBlock(text=f"Replaced the source of cell {reply.cell_id} (index {reply.index}). Old source:\n{reply.old_source}")],
            structured={"status": "replaced", **reply.model_dump(mode="json", exclude={"old_provenance"})},
            undo=kept_outputs.kept_provenance(reply.old_provenance),  # its undo puts the badge back as it was
        )

    async def _delete_cell(self, args: DeleteCellArgs, call: CallInfo) -> ToolResult:
        used = self._kept[1] if self._kept[0] == call.turn_id else 0
        budget = max(0, min(kept_outputs.CELL_CHARS, kept_outputs.TURN_CHARS - used))
        self._kept = (call.turn_id, used + budget)  # held while it runs: parallel deletes share the turn's cap
        chars = 0
        try:
            async with self._unless_changed("delete_cell", args.cell_id) as expected:
                reply = await self.bridge.delete_cell(
                    DeleteCellParams(cell_id=args.cell_id, expected_source=expected, max_outputs_chars=budget))
            undo, chars = kept_outputs.keep_deleted(reply.outputs, reply.execution_count, reply.metadata,
                                                    reply.attachments, reply.omitted, budget)
        finally:
            self._kept = (call.turn_id, self._kept[1] - budget + chars)
        self._versions.pop(args.cell_id, None)
        text = f"Deleted cell {reply.cell_id} (it was at index {reply.index}), with its outputs. Its source was:\n{reply.old_source}"
        return ToolResult(
            content=[TextBlock(text=text)],
            structured={"status": "deleted", **reply.model_dump(
                mode="json", exclude={"outputs", "execution_count", "metadata", "attachments", "omitted"})},
            undo=undo,  # for its undo, in the rollout only
        )

    async def _move_cell(self, args: MoveCellArgs, call: CallInfo) -> ToolResult:
        async with self._unless_changed("move_cell", args.cell_id) as expected:
            reply = await self.bridge.move_cell(
                MoveCellParams(cell_id=args.cell_id, to_index=args.to_index, expected_source=expected))
        return _result(f"Moved cell {reply.cell_id} from index {reply.from_index} to index {reply.to_index}.",
                       {"status": "moved", **reply.model_dump(mode="json")})

    @contextlib.asynccontextmanager
    async def _unless_changed(self, tool: str, cell_id: str) -> AsyncIterator[str | None]:
        """Yield the source the change to ``cell_id`` is conditional on; turn the extension's
        ``conflict`` into an error that names the cell and gives its source now, which the model
        has then read (so a change built on it may go through)."""
        try:
            yield self._versions.get(cell_id)
        except BridgeError as exc:
            if exc.code != "conflict":
                raise
            notebook = await self.bridge.read_notebook(ReadNotebookParams(include_outputs=False))
            cell = next((c for c in notebook.cells if c.id == cell_id), None)
            if cell is None:
                raise BridgeError(tool, f"cell {cell_id} was changed by the person and is gone now", "not_found") from None
            self._versions[cell_id] = cell.source
            raise CellChanged(
                f"{tool}: nothing was changed: the person edited cell {cell_id} (index {cell.index}) after you last "
                f"read it, and their edit is kept. Its source now:\n{cell.source}"
            ) from None

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

    def _why_not_live(self) -> str:
        """Why the notebook cannot be reached live: no page open now, or no extension at all."""
        gone = self.bridge.page_gone()
        if gone is not None:
            return (f"no open page of this notebook was seen in the last {gone:.0f} s (the nbagent extension is "
                    "active, but the notebook is not open in any browser tab now)")
        return "the nbagent JupyterLab extension is not active in this front end"

    def _no_page(self, tool: str) -> ToolResult:
        path = self._notebook_file()
        instead = (" Use run_python to run code in the kernel." if tool == "run_cell" else
                   f" Or change its saved file {path} instead (nbformat JSON)." if path is not None else "")
        return ToolResult.error(f"{tool}: nothing was done: {self._why_not_live()}. Ask the person to open the "
                                f"notebook (nbagent finds its page as soon as it loads), then try again.{instead}")

    async def _read_notebook_fallback(self, args: ReadNotebookArgs, call: CallInfo) -> ToolResult:
        path = self._notebook_file()
        if path is None:
            return ToolResult.error(
                f"read_notebook: {self._why_not_live()} and the notebook's file is not known, so the notebook "
                "cannot be read. Ask the user, or use run_python to inspect variables."
            )
        try:
            notebook = read_notebook_file(path, args.include_outputs, args.max_output_chars)
        except NotebookFileError as exc:
            return ToolResult.error(f"read_notebook: {exc}")
        note = (f"(Read from the saved file because {self._why_not_live()}: "
                "unsaved edits are missing, and cells cannot be written or run by id.)")
        return self._told(notebook, call, note, {"status": "read_from_file"})

    async def _insert_cell_fallback(self, args: InsertCellArgs, call: CallInfo) -> ToolResult:
        return self._deliver(args.source, args.cell_type, what="insert a new cell")

    async def _replace_cell_fallback(self, args: ReplaceCellArgs, call: CallInfo) -> ToolResult:
        return self._deliver(args.source, "code", what=f"replace cell {args.cell_id}", replacing=args.cell_id)

    async def _delete_cell_fallback(self, args: DeleteCellArgs, call: CallInfo) -> ToolResult:
        return self._not_here("delete_cell")

    async def _move_cell_fallback(self, args: MoveCellArgs, call: CallInfo) -> ToolResult:
        return self._not_here("move_cell")

    async def _run_cell_fallback(self, args: RunCellArgs, call: CallInfo) -> ToolResult:
        return self._not_here("run_cell", " Use run_python to run code in the kernel.")

    @staticmethod
    def _not_here(tool: str, instead: str = "") -> ToolResult:
        return ToolResult.error(
            f"{tool}: not possible here: the nbagent JupyterLab extension is not active in this front end "
            f"(VS Code, Colab, classic Notebook or a headless run).{instead}"
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


class CellChanged(Exception):
    """A change refused because the person edited the cell; the message is the model's error."""


def _provenance(call: CallInfo) -> Provenance:
    return Provenance(thread_id=call.thread_id, turn_id=call.turn_id, call_id=call.call_id)
